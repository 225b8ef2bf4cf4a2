//! The `ragbox` binary: see `ragbox --help`.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `arena_eager_commit` (mimalloc.h v3, the `libmimalloc-sys` default).
const MI_OPTION_ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;

/// Arenas committed up front keep every page they ever held resident (freed
/// pages are only marked reusable), and each agent's server keeps its own:
/// measured, 44 of a server's 50 MiB of private memory after a few searches,
/// 20 without. Committed on demand, freed pages go back; indexing is as fast.
/// The arena is made at the first allocation, before `main`, so this runs as
/// a static constructor. The option's index is checked by its documented
/// default (2) before it is set.
extern "C" fn commit_arenas_on_demand() {
    // SAFETY: plain calls into mimalloc's option table; nothing else runs yet.
    unsafe {
        if libmimalloc_sys::mi_option_get(MI_OPTION_ARENA_EAGER_COMMIT) == 2 {
            libmimalloc_sys::mi_option_set(MI_OPTION_ARENA_EAGER_COMMIT, 0);
        }
    }
}

#[used]
#[cfg_attr(
    any(target_os = "linux", target_os = "android", target_os = "freebsd"),
    unsafe(link_section = ".init_array")
)]
#[cfg_attr(target_vendor = "apple", unsafe(link_section = "__DATA,__mod_init_func"))]
#[cfg_attr(windows, unsafe(link_section = ".CRT$XCU"))]
static COMMIT_ARENAS_ON_DEMAND: extern "C" fn() = commit_arenas_on_demand;

fn main() -> std::process::ExitCode {
    ragbox::cli::main()
}
