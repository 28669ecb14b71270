#pragma once
// Static evidence from a binary's SASS, without a GPU: per function, the instruction mix
// that says whether loads are vectorised, registers spill, tensor cores or TMA are used.
//   auto fns = profile::parse_sass(run_command({"cuobjdump", "-sass", "cand.so"}).output);
//   std::cout << profile::summarize(fns);
//   // softmax_rows: 312 instr; global loads 4B x6 16B x2; stores 4B x1; LDL/STL 0/0 (no local memory); HGMMA 0, HMMA 0; BAR 2
//
// Input: `cuobjdump -sass` text (functions start at "Function : NAME") or `nvdisasm`
// text (functions start at ".text.NAME:"). An instruction is a line "/*ADDR*/ [@P] OPCODE.MODS operands ;";
// the lines holding only the encoding ("/* 0x... */") and everything else are ignored.
// Counting rules (static counts: one per instruction in the code, not per execution):
//  - global loads: LDG and LDGSTS (cp.async); global stores: STG. Access width from the
//    modifiers: .U8/.S8 = 1 byte, .U16/.S16 = 2, none = 4, .64 = 8, .128 = 16, .256 = 32.
//  - shared: LDS, LDSM / STS, STSM; local: LDL / STL (register spills or stack arrays).
//  - hgmma counts every warpgroup MMA (HGMMA, and QGMMA/IGMMA/BGMMA for fp8/int8/binary);
//    hmma HMMA; imma IMMA; tma UTMALDG, UTMASTG, UTMAREDG, UBLKCP, UBLKRED; barriers BAR.
// A binary with code for several architectures gives one entry per function and arch.
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace kforge::profile {

struct sass_function {
  std::string name;      // as in the binary (mangled for C++ kernels)
  std::string demangled; // abi::__cxa_demangle of name; equal to name when it is not mangled
  std::string arch;      // "sm_90" when the listing says, else ""
  int instructions = 0;
  std::map<std::string, int> opcodes; // base opcode (before the first dot) -> count
  int global_loads = 0, global_stores = 0;
  std::map<int, int> global_load_bytes;  // access width in bytes -> count
  std::map<int, int> global_store_bytes; // access width in bytes -> count
  int shared_loads = 0, shared_stores = 0;
  int local_loads = 0, local_stores = 0; // LDL, STL
  int hgmma = 0, hmma = 0, imma = 0, tma = 0, barriers = 0;
};

/// Every function of a cuobjdump -sass or nvdisasm listing, in listing order; empty when
/// the text holds none (a host-only binary, or a tool's error message).
[[nodiscard]] std::vector<sass_function> parse_sass(std::string_view text);

/// "softmax_rows" for "_Z12softmax_rowsPKfPfii" or "void ns::f<128>(float const*)": the
/// function's qualified name without return type, template arguments and parameters.
/// Also works on the names ncu prints, so the two can be matched.
[[nodiscard]] std::string base_name(std::string_view name);

/// The demangled name, or `name` itself when it is not a mangled C++ name.
[[nodiscard]] std::string demangle(const std::string& name);

/// Any 16-byte (or wider) global load.
[[nodiscard]] bool vectorized_loads(const sass_function& f);

[[nodiscard]] nlohmann::json to_json(const sass_function& f);

/// One line: "softmax_rows: 312 instr; global loads 4B x6 16B x2; stores 4B x1; LDL/STL 0/0
/// (no local memory); HGMMA 0, HMMA 0; BAR 2", then "; LDS/STS a/b" and "; TMA n" when nonzero.
[[nodiscard]] std::string summarize(const sass_function& f);
/// summarize() of each function, one per line (no trailing newline).
[[nodiscard]] std::string summarize(const std::vector<sass_function>& fns);

/// The function of `fns` that a kernel named `kernel_name` (mangled, or demangled as ncu or
/// c++filt print it) runs: exact mangled or demangled match first, then same base_name;
/// nullptr when none.
[[nodiscard]] const sass_function* find_function(const std::vector<sass_function>& fns, std::string_view kernel_name);

} // namespace kforge::profile
