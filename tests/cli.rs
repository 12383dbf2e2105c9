//! The command line as a user meets it (issue 44, item 9): what it echoes to the terminal, text
//! from a file or standard input, and output that can run to hundreds of MB (its size said first,
//! `--layers` and `--heads` to cut it).

use crate::schema_check::Checker;
use serde_json::Value;
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

fn minilm() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("models").join("minilm")
}

fn attnviz() -> Command {
    Command::new(env!("CARGO_BIN_EXE_attnviz"))
}

/// Exit status, stdout and stderr (as bytes: what reached the terminal) of `attnviz args…`,
/// with `stdin` on its standard input.
fn run(args: &[&std::ffi::OsStr], stdin: &[u8]) -> (i32, Vec<u8>, Vec<u8>) {
    let mut child = attnviz()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The CLI may exit before it reads: a closed pipe is not the test's failure.
    let _ = child.stdin.take().unwrap().write_all(stdin);
    let out = child.wait_with_output().unwrap();
    (out.status.code().unwrap_or(-1), out.stdout, out.stderr)
}

fn json(args: &[&str], stdin: &[u8]) -> Value {
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_ref()).collect();
    let (code, out, err) = run(&args, stdin);
    assert_eq!(code, 0, "{args:?}: {}", String::from_utf8_lossy(&err));
    serde_json::from_slice(&out).unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn what_the_cli_echoes_has_its_control_characters_escaped() {
    use std::os::unix::ffi::OsStrExt;
    let model = minilm();
    let model = model.as_os_str();
    // Not UTF-8 and an escape sequence that turns a terminal's text red; an unknown format
    // holding one; a text file whose name holds one.
    let text = std::ffi::OsStr::from_bytes(b"caf\xe9 \x1b[31mred\xff");
    let dir = scratch("cli-echo");
    let odd_name = dir.join("\x1b[31mtext\x07");
    std::fs::write(&odd_name, b"\xff\xfe").unwrap();
    for args in [
        vec!["attend".as_ref(), "--model".as_ref(), model, "--text".as_ref(), text],
        vec![
            "attend".as_ref(),
            "--model".as_ref(),
            model,
            "--format".as_ref(),
            "\x1b[31m".as_ref(),
        ],
        vec![
            "attend".as_ref(),
            "--model".as_ref(),
            model,
            "--text-file".as_ref(),
            odd_name.as_ref(),
        ],
    ] {
        let (code, _, err) = run(&args, b"");
        assert_eq!(code, 2, "{args:?}");
        assert!(!err.iter().any(|&b| b < 0x20 && b != b'\n'), "{args:?}: {err:?}");
        let err = String::from_utf8_lossy(&err);
        assert!(err.contains("\\u{1b}[31m") && err.lines().count() <= 2, "{args:?}: {err}");
    }
}

#[test]
fn text_comes_from_a_file_or_standard_input() {
    let dir = scratch("cli-text-file");
    let file = dir.join("text.txt");
    std::fs::write(&file, "The cat sat on the mat.\n").unwrap();
    let model = minilm();
    let model = model.to_str().unwrap();
    let given = json(&["attend", "--model", model, "--text", "The cat sat on the mat."], b"");
    let from_file = json(&["attend", "--model", model, "--text-file", file.to_str().unwrap()], b"");
    let from_stdin =
        json(&["heads", "--model", model, "--text-file", "-"], b"The cat sat on the mat.\r\n");
    assert_eq!(from_file["text"], "The cat sat on the mat.");
    assert_eq!(from_file["tokens"], given["tokens"]);
    assert_eq!(from_file["attentions"][3]["data"], given["attentions"][3]["data"]);
    assert_eq!(from_stdin["text"], "The cat sat on the mat.");
    assert_eq!(from_stdin["tokens"], given["tokens"]);

    let bad = dir.join("latin1.txt");
    std::fs::write(&bad, b"caf\xe9").unwrap();
    for (args, needle) in [
        (vec!["--text-file", bad.to_str().unwrap()], "is not UTF-8 text (byte 3 is not)"),
        (vec!["--text-file", "/nonexistent/text"], "cannot read /nonexistent/text"),
        (vec!["--text", "x", "--text-file", "-"], "--text or --text-file, not both"),
    ] {
        let head = ["attend", "--model", model];
        let args: Vec<&std::ffi::OsStr> = head.iter().chain(&args).map(|a| a.as_ref()).collect();
        let (code, out, err) = run(&args, b"");
        let err = String::from_utf8_lossy(&err);
        assert!(code == 2 && out.is_empty() && err.contains(needle), "{args:?}: {err}");
    }
}

/// "132.1 MiB" → bytes, and how far the rounding may put them.
fn said_size(line: &str) -> (f64, f64) {
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "writing").expect(line) + 1;
    let n: f64 = words[at].parse().expect(line);
    let unit = match words[at + 1] {
        "bytes" => 1.0,
        "KiB" => 1024.0,
        "MiB" => 1048576.0,
        "GiB" => 1073741824.0,
        u => panic!("unit {u} in {line}"),
    };
    (n * unit, 0.05 * unit)
}

#[test]
fn large_json_is_announced_with_its_size_before_it_is_written() {
    // 512 tokens of MiniLM: 6 layers × 12 heads of 512 × 512 maps, about 130 MB of JSON.
    let text: Vec<String> = (0..200).map(|i| format!("word{i}")).collect();
    let mut child = attnviz()
        .args(["attend", "--model", minilm().to_str().unwrap(), "--text", &text.join(" ")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Nothing reads stdout until stderr has spoken: a notice written after the JSON would never
    // come (the output pipe fills and blocks the writer).
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::BufReader::new(stderr).read_line(&mut line);
        let _ = tx.send(line);
    });
    let notice = rx.recv_timeout(Duration::from_secs(120));
    let mut out = Vec::new();
    if notice.is_ok() {
        child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
    } else {
        child.kill().unwrap();
    }
    assert!(child.wait().unwrap().success() || notice.is_err());
    let notice = notice.expect("no word on stderr before the JSON");
    assert!(notice.starts_with("attnviz: writing") && notice.contains("--layers"), "{notice}");
    let (said, tolerance) = said_size(&notice);
    assert!(out.len() > 100 << 20, "{} bytes", out.len());
    assert!((said - out.len() as f64).abs() <= tolerance, "{notice}: {} bytes", out.len());
}

#[test]
fn layers_and_heads_cut_the_output() {
    let model = minilm();
    let model = model.to_str().unwrap();
    let text = "The cat sat on the mat.";
    let whole = json(&["attend", "--model", model, "--text", text, "--measure", "value-norm"], b"");
    let cut = json(
        &[
            "attend",
            "--model",
            model,
            "--text",
            text,
            "--measure",
            "value-norm",
            "--layers",
            "1,4-5",
            "--heads",
            "3,0",
        ],
        b"",
    );
    Checker::new().attend(&cut).unwrap();
    for key in ["attentions", "value_norms"] {
        let blocks = cut[key].as_array().unwrap();
        let layers: Vec<u64> = blocks.iter().map(|b| b["layer"].as_u64().unwrap()).collect();
        assert_eq!(layers, [1, 4, 5], "{key}");
        for b in blocks {
            let all = &whole[key][b["layer"].as_u64().unwrap() as usize];
            let map = all["query_len"].as_u64().unwrap() * all["key_len"].as_u64().unwrap();
            let data = |v: &Value, h: u64| {
                v["data"].as_array().unwrap()[(h * map) as usize..][..map as usize].to_vec()
            };
            assert_eq!(
                (b["heads"].clone(), b["head_ids"].clone()),
                (2.into(), serde_json::json!([0, 3]))
            );
            assert_eq!(b["shape"][0], 2);
            assert_eq!((data(b, 0), data(b, 1)), (data(all, 0), data(all, 3)), "{key}");
            if key == "attentions" {
                let heads: Vec<&Value> =
                    b["scores"].as_array().unwrap().iter().map(|s| &s["head"]).collect();
                assert_eq!(heads, [0, 3]);
            }
        }
    }
    // The head scores and the table too.
    let heads =
        json(&["heads", "--model", model, "--text", text, "--layers", "2", "--heads", "5"], b"");
    let listed: Vec<(&Value, &Value)> =
        heads["heads"].as_array().unwrap().iter().map(|s| (&s["layer"], &s["head"])).collect();
    assert_eq!(listed, [(&2.into(), &5.into())]);
    let (code, table, _) = run(
        &[
            "attend", "--model", model, "--text", text, "--format", "table", "--layers", "0",
            "--heads", "1",
        ]
        .map(AsRef::as_ref),
        b"",
    );
    let table = String::from_utf8(table).unwrap();
    assert_eq!(code, 0);
    assert_eq!(table.matches("== encoder_self layer").count(), 1, "{table}");
    assert!(
        table.contains("layer 0") && table.contains("head 1 ") && !table.contains("head 0 "),
        "{table}"
    );
    // Numbers the model does not have are refused before any work.
    for (flag, value, needle) in [
        ("--layers", "6", "minilm-l6 has no layer 6 (its layers are 0 to 5)"),
        ("--heads", "0-12", "minilm-l6 has no head 12 (its heads are 0 to 11)"),
        ("--heads", "3-1", "--heads needs numbers"),
    ] {
        let (code, out, err) =
            run(&["attend", "--model", model, "--text", text, flag, value].map(AsRef::as_ref), b"");
        let err = String::from_utf8_lossy(&err);
        assert!(code == 2 && out.is_empty() && err.contains(needle), "{flag} {value}: {err}");
    }
}
