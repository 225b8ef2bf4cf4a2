//! The `ragbox` binary: see `ragbox --help`.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    ragbox::cli::main()
}
