//! The `caldera` binary: everything lives in the library; this maps it to an exit code.

fn main() -> std::process::ExitCode {
    caldera::cli::main()
}
