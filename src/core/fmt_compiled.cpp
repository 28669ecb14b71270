// fmt's out-of-line part, compiled once into kforge instead of in every translation unit.
// Why: header-only fmt (FMT_HEADER_ONLY) doubled the compile time of each file (20.7 s ->
// 9.9 s for worker/evaluate.cpp), and linking Debian's libfmt.so would need it on the GPU
// machines, which do not have it. Including format-inl.h without FMT_HEADER_ONLY defines
// fmt's non-template functions here; the explicit instantiations below are the ones
// format.h declares `extern template`.
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {
template FMT_API auto thousands_sep_impl<char>(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto thousands_sep_impl<wchar_t>(locale_ref) -> thousands_sep_result<wchar_t>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
template FMT_API auto decimal_point_impl(locale_ref) -> wchar_t;
}  // namespace detail
FMT_END_NAMESPACE
