//! The `ragbox` binary: see `ragbox --help`.

fn main() -> std::process::ExitCode {
    ragbox::cli::main()
}
