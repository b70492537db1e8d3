//! `rageval generate --rejected FILE` follows the rules of `--out` (issue 41 item 7): an
//! existing file is kept unless `--force` (or `--append`, which adds to it), and a `--rejected`
//! naming the `--out` file is refused before any call, so neither file is lost.

use crate::harness::Test;
use crate::support::Project;

const CANARY: &str = "answerable:\n  - question: Hand-written, and not to be overwritten?\n";

fn generate(p: &Project) -> Test<'_> {
    p.rageval([
        "generate",
        "--answerable",
        "2",
        "--unanswerable",
        "1",
        "--off-topic",
        "0",
    ])
}

#[test]
fn an_existing_rejected_file_is_kept_without_force() {
    let p = Project::sample();
    p.write("evalsets/mine.yaml", CANARY);
    generate(&p)
        .args(["--rejected", "evalsets/mine.yaml"])
        .fails("`evalsets/mine.yaml` (`--rejected`) exists: pass --force to overwrite it, or --append to add to it")
        .file("evalsets/mine.yaml", CANARY)
        .absent("evalsets/generated.yaml")
        .run();
    // With --force it is the rejected file (the mock rejects nothing: empty).
    generate(&p)
        .args(["--rejected", "evalsets/mine.yaml", "--force"])
        .stdout_any("the account of the generated set is tested in generate.rs")
        .stderr_any("the calls are counted in generate.rs")
        .file("evalsets/mine.yaml", "")
        .run();
}

#[test]
fn a_rejected_file_naming_the_out_file_is_refused() {
    let p = Project::sample();
    p.write("evalsets/generated.yaml", CANARY);
    for extra in [&["--force"][..], &["--append"][..]] {
        generate(&p)
            .args(["--rejected", "evalsets/../evalsets/generated.yaml"])
            .args(extra)
            .fails("`--rejected evalsets/../evalsets/generated.yaml` names the `--out` file: the rejected candidates would replace the question set; choose another file")
            .file("evalsets/generated.yaml", CANARY)
            .run();
    }
}
