//! The `vramfit` command line: the same pure model as the page, scriptable outside the browser.

const HELP: &str = "vramfit: GPU memory and system RAM estimates for LLM fine-tuning and inference

Usage: vramfit <COMMAND> [OPTIONS]

Commands:
  help        Show this help
  version     Print the version

Options:
  -h, --help  Show this help
";

/// Runs the CLI with the given arguments (without the program name); returns the process exit code.
pub fn run(args: Vec<String>) -> i32 {
    match args.first().map(String::as_str) {
        None | Some("help" | "-h" | "--help") => {
            print!("{HELP}");
            0
        }
        Some("version" | "-V" | "--version") => {
            println!("vramfit {}", env!("CARGO_PKG_VERSION"));
            0
        }
        Some(other) => {
            eprintln!("vramfit: unknown command '{other}'\n\n{HELP}");
            2
        }
    }
}
