#pragma once
// The Landlock layers of kforge-confine (filesystem, TCP, scoping), through the raw system
// calls: Debian's <linux/landlock.h> stops at ABI 2, so the newer constants are defined here.
// Only the rights the running kernel's ABI knows are handled. Part of kforge-confine only.
#include "sandbox/layer_namespaces.hpp"
#include "sandbox/policy.hpp"
#include "sandbox/report.hpp"

#include <cstdint>

namespace kforge::sandbox::landlock {

// Filesystem rights (ABI in which each appeared).
inline constexpr std::uint64_t execute = 1ull << 0, write_file = 1ull << 1, read_file = 1ull << 2,
                               read_dir = 1ull << 3, remove_dir = 1ull << 4, remove_file = 1ull << 5,
                               make_char = 1ull << 6, make_dir = 1ull << 7, make_reg = 1ull << 8,
                               make_sock = 1ull << 9, make_fifo = 1ull << 10, make_block = 1ull << 11,
                               make_sym = 1ull << 12,
                               refer = 1ull << 13,      // ABI 2
                               truncate = 1ull << 14,   // ABI 3
                               ioctl_dev = 1ull << 15;  // ABI 5
// Rights that apply to a file (the rest only to directories: a rule on a file with them is EINVAL).
inline constexpr std::uint64_t file_rights = execute | write_file | read_file | truncate | ioctl_dev;
// Network rights (ABI 4) and scopes (ABI 6).
inline constexpr std::uint64_t net_bind_tcp = 1ull << 0, net_connect_tcp = 1ull << 1;
inline constexpr std::uint64_t scope_abstract_unix_socket = 1ull << 0, scope_signal = 1ull << 1;

/// Every filesystem right ABI `abi` knows.
[[nodiscard]] std::uint64_t fs_rights_of_abi(int abi);

/// Restricts the calling process (and what it runs) with a ruleset built from `p`:
/// read_paths read+execute, write_paths and scratch every right, device_paths read, write,
/// truncate and ioctl; /proc read (beneath /proc/self also write when p.proc_self_write);
/// /sys read; TCP bind and connect refused; abstract unix sockets and signals scoped to the
/// sandbox. A path that does not exist is skipped and named in the report.
/// @pre no_new_privs is set, or the caller has CAP_SYS_ADMIN in its user namespace.
/// Sets landlock_filesystem, landlock_network and landlock_scope in `r`.
void apply(const policy& p, const namespace_state& ns, layer_report& r);

} // namespace kforge::sandbox::landlock
