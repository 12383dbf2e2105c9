//! `attnviz attend --model <dir or .gguf> --text <TEXT> [--format json|table] [--lens] [--layers L] [--heads H] [--generate N [--temperature T] [--top-k K] [--seed S]]`
//! `attnviz step --model <dir> --text <TEXT> --kind KIND --layer N --head N`
//! `attnviz positions --model <dir> [--count N]`
//! `attnviz heads --model <dir> --text <TEXT> [--format json|table] [--layers L] [--heads H]`
//! (`--text-file PATH`, `-` for stdin, in place of `--text`)
//! `attnviz serve [--port N] [--host IP] [--prefix /course/week3/] [--root DIR] [--verbose]`
//!
//! Runs one forward natively and prints the attention (JSON for machines, a per-head summary
//! for people), or every intermediate of one head (JSON), or the position vectors the model adds
//! to its token embeddings (JSON, positions 0..N, 128 by default). Both JSON documents are the types of
//! `attnviz::output`, described by `schema/attend.schema.json`. Bad input (including arguments
//! that are not UTF-8) → one line on stderr and exit status 2; `--help` → usage on stdout, 0.
//! What goes to stderr has its control characters escaped: it may quote the user's text, and a
//! terminal would act on an escape sequence in it. JSON over [`LARGE_OUTPUT_BYTES`] is announced
//! with its size on stderr before it is written.
//! `serve` is this binary's own module: the wasm library has no server in it.

mod cut;
mod serve;

use attnviz::heads::HeadScores;
use attnviz::limits::human_bytes;
use attnviz::models::{Asks, Model, DEFAULT_POSITIONS};
use attnviz::output::{AttendResult, HeadsResult, PositionsResult, StepResult};
use attnviz::result::{
    row_entropies, top_keys, Attended, AttentionKind, GenerateOptions, HeadRequest,
};
use cut::Cut;
use serde::Serialize;
use std::borrow::Cow;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

const USAGE: &str = "usage: attnviz attend --model <dir or .gguf> TEXT [--format json|table] [--measure raw|value-norm] [--lens] [CUT] [GENERATE]
       attnviz step --model <dir> TEXT --kind encoder_self|decoder_self|cross --layer N --head N [GENERATE]
       attnviz positions --model <dir> [--count N]
       attnviz heads --model <dir> TEXT [--format json|table] [CUT] [GENERATE]
       attnviz serve [--port N (default $PORT or 8080; 0: any free port)] [--host IP (default 127.0.0.1)]
                     [--prefix /course/week3/] [--root DIR (holding www/, pkg/, models/; default .)] [--verbose]
TEXT: --text <TEXT>, or --text-file PATH (UTF-8; `-`: standard input; one final line break is dropped)
CUT: --layers L, --heads H (e.g. 0,2,5-7): print only these layers and heads (default: all)
GENERATE (decoder-only models): --generate N [--temperature T (0: greedy)] [--top-k K] [--seed S]
Every command: --weights f32|int8 (default f32, the exact weights; int8: the manifest's int8 file set)";

/// JSON at least this long is announced on stderr before it is written (a 512-token `attend`
/// runs to hundreds of MB).
const LARGE_OUTPUT_BYTES: u64 = 16 << 20;

/// Largest `--text-file` read: texts are cut at 64 KiB before tokenisation, and the JSON
/// repeats the text whole.
const MAX_TEXT_FILE_BYTES: u64 = 16 << 20;

enum Command {
    Attend {
        table: bool,
        value_norms: bool,
        /// Also the logit lens (`logit_lens`).
        lens: bool,
    },
    Step(HeadRequest),
    /// Positions 0..count; `asked`: the count was given (the default is clamped to the model's).
    Positions {
        count: usize,
        asked: bool,
    },
    Heads {
        table: bool,
    },
}

struct Args {
    model: PathBuf,
    /// A manifest file set (`int8`); None: `files`, the exact f32 weights.
    weights: Option<String>,
    text: String,
    generate: GenerateOptions,
    cut: Cut,
    command: Command,
}

/// The text of `--text-file PATH` (`-`: standard input), without one final line break (as a
/// shell's `$(cat PATH)` drops it: a file's last line ends with one, the text does not).
fn read_text_file(path: &str) -> Result<String, String> {
    let shown = if path == "-" { "standard input" } else { path };
    let source: Box<dyn Read> = if path == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(
            std::fs::File::open(path)
                .map_err(|e| format!("--text-file: cannot read {path}: {e}"))?,
        )
    };
    let mut bytes = Vec::new();
    source
        .take(MAX_TEXT_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("--text-file: cannot read {shown}: {e}"))?;
    if bytes.len() as u64 > MAX_TEXT_FILE_BYTES {
        return Err(format!(
            "--text-file: {shown} holds more than the {} read",
            human_bytes(MAX_TEXT_FILE_BYTES)
        ));
    }
    let mut text = String::from_utf8(bytes).map_err(|e| {
        format!(
            "--text-file: {shown} is not UTF-8 text (byte {} is not)",
            e.utf8_error().valid_up_to()
        )
    })?;
    for ending in ["\r\n", "\n"] {
        if text.ends_with(ending) {
            text.truncate(text.len() - ending.len());
            break;
        }
    }
    Ok(text)
}

/// `Ok(None)`: help was asked for.
fn parse(args: &[String]) -> Result<Option<Args>, String> {
    let mut it = args.iter();
    let command_name = it.next().map(String::as_str);
    let heads = command_name == Some("heads");
    let (step, positions) = match command_name {
        Some("attend") | Some("heads") => (false, false),
        Some("step") => (true, false),
        Some("positions") => (false, true),
        Some("--help") | Some("-h") => return Ok(None),
        None => return Err(USAGE.into()),
        Some(other) => return Err(format!("unknown command `{other}`\n{USAGE}")),
    };
    let (mut model, mut text, mut table, mut kind, mut layer, mut head, mut count) =
        (None, None, false, None, None, None, None);
    let mut value_norms = false;
    let mut lens = false;
    let mut weights = None;
    let mut text_file = None;
    let mut cut = Cut::default();
    let mut generate = GenerateOptions::default();
    let number = |flag: &str, v: String| {
        v.parse::<usize>().map_err(|_| format!("{flag} needs a number, not `{v}`"))
    };
    while let Some(flag) = it.next() {
        let mut value =
            || it.next().cloned().ok_or_else(|| format!("{flag} needs a value\n{USAGE}"));
        match flag.as_str() {
            "--model" => model = Some(PathBuf::from(value()?)),
            "--text" if !positions => text = Some(value()?),
            "--text-file" if !positions => text_file = Some(value()?),
            "--layers" if !step && !positions => {
                cut.layers = Some(cut::parse_list(flag, &value()?)?)
            }
            "--heads" if !step && !positions => cut.heads = Some(cut::parse_list(flag, &value()?)?),
            "--count" if positions => count = Some(number(flag, value()?)?),
            "--format" if !step && !positions => match value()?.as_str() {
                "json" => table = false,
                "table" => table = true,
                f => return Err(format!("unknown format `{f}` (json or table)")),
            },
            "--measure" if !step && !positions && !heads => match value()?.as_str() {
                "raw" => value_norms = false,
                "value-norm" => value_norms = true,
                m => return Err(format!("unknown measure `{m}` (raw or value-norm)")),
            },
            "--lens" if !step && !positions && !heads => lens = true,
            "--kind" if step => {
                let v = value()?;
                kind = Some(AttentionKind::parse(&v).ok_or_else(|| {
                    format!("unknown attention kind `{v}` (encoder_self, decoder_self or cross)")
                })?);
            }
            "--layer" if step => layer = Some(number(flag, value()?)?),
            "--head" if step => head = Some(number(flag, value()?)?),
            "--generate" if !positions => generate.max_new_tokens = number(flag, value()?)?,
            "--top-k" if !positions => generate.sampling.top_k = number(flag, value()?)?,
            "--seed" if !positions => {
                generate.sampling.seed = value()?
                    .parse()
                    .map_err(|_| format!("{flag} needs a number from 0 to {}", u32::MAX))?
            }
            "--temperature" if !positions => {
                let v = value()?;
                generate.sampling.temperature = v
                    .parse::<f64>()
                    .ok()
                    .filter(|t| t.is_finite() && *t >= 0.0)
                    .ok_or_else(|| format!("{flag} needs a number ≥ 0, not `{v}`"))?;
            }
            "--weights" => match value()?.as_str() {
                "f32" => weights = None,
                "int8" => weights = Some("int8".to_string()),
                v => return Err(format!("--weights must be f32 or int8, not `{v}`")),
            },
            "--help" | "-h" => return Ok(None),
            other => return Err(format!("unknown option `{other}`\n{USAGE}")),
        }
    }
    let required = |name: &str| format!("{name} is required\n{USAGE}");
    let command = if positions {
        Command::Positions { count: count.unwrap_or(DEFAULT_POSITIONS), asked: count.is_some() }
    } else if heads {
        Command::Heads { table }
    } else if step {
        Command::Step(HeadRequest {
            kind: kind.ok_or_else(|| required("--kind"))?,
            layer: layer.ok_or_else(|| required("--layer"))?,
            head: head.ok_or_else(|| required("--head"))?,
        })
    } else {
        Command::Attend { table, value_norms, lens }
    };
    let model = model.ok_or_else(|| required("--model"))?;
    let text = match (text, text_file) {
        (Some(_), Some(_)) => return Err("give --text or --text-file, not both".into()),
        (Some(t), None) => t,
        (None, Some(path)) => read_text_file(&path)?,
        (None, None) if positions => String::new(),
        (None, None) => return Err(required("--text (or --text-file)")),
    };
    Ok(Some(Args { model, weights, text, generate, cut, command }))
}

fn print_table(
    out: &mut impl Write,
    model_id: &str,
    a: &Attended,
    cut: &Cut,
) -> std::io::Result<()> {
    let f = &a.output;
    writeln!(
        out,
        "model {model_id}: {} source tokens, {} target tokens{}",
        f.source_tokens.len(),
        f.target_tokens.len(),
        if f.truncated { " (input truncated)" } else { "" }
    )?;
    if let Some(t) = &f.output_text {
        let reason = f.stop_reason.map(|r| r.as_str()).unwrap_or("");
        writeln!(out, "output: {t}  [stopped: {reason}]")?;
    }
    for b in a.attentions.iter().filter(|b| cut.keeps_layer(b.layer)) {
        let (queries, keys) = f.tokens_of(b.kind);
        writeln!(
            out,
            "\n== {} layer {} ({} heads, {}×{})",
            b.kind.as_str(),
            b.layer,
            b.heads,
            b.query_len,
            b.key_len
        )?;
        for h in (0..b.heads).filter(|&h| cut.keeps_head(h)) {
            let ent = row_entropies(b, h);
            let mean_ent = ent.iter().sum::<f32>() / ent.len().max(1) as f32;
            writeln!(out, "  head {h}  mean entropy {mean_ent:.2} nats")?;
            for (q, qt) in queries.iter().enumerate().take(b.query_len) {
                let tops: Vec<String> = top_keys(b.row(h, q), 3)
                    .into_iter()
                    .map(|(k, w)| {
                        format!("{} {:.2}", keys.get(k).map(String::as_str).unwrap_or("?"), w)
                    })
                    .collect();
                writeln!(out, "    {qt:>14} → {}", tops.join(", "))?;
            }
        }
    }
    Ok(())
}

fn print_heads(out: &mut impl Write, model_id: &str, scores: &[HeadScores]) -> std::io::Result<()> {
    writeln!(out, "model {model_id}: {} heads, strongest pattern first", scores.len())?;
    let mut ranked: Vec<&HeadScores> = scores.iter().collect();
    ranked.sort_by(|a, b| b.score.total_cmp(&a.score));
    writeln!(
        out,
        "{:<13} {:>5} {:>4}  {:<10} {:>5}  {:>7} {:>5} {:>5} {:>5} {:>5} {:>5} {:>5}",
        "kind",
        "layer",
        "head",
        "label",
        "score",
        "entropy",
        "first",
        "spec",
        "prev",
        "self",
        "delim",
        "induc"
    )?;
    let opt = |v: Option<f32>| v.map_or("  -  ".to_string(), |v| format!("{v:.2}"));
    for s in ranked {
        let label = serde_json::to_value(s.label)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default();
        writeln!(
            out,
            "{:<13} {:>5} {:>4}  {:<10} {:>5.2}  {:>7.2} {:>5.2} {:>5.2} {:>5} {:>5} {:>5.2} {:>5}",
            s.kind.as_str(),
            s.layer,
            s.head,
            label,
            s.score,
            s.entropy,
            s.first,
            s.special,
            opt(s.previous),
            opt(s.self_token),
            s.delimiter,
            opt(s.induction)
        )?;
    }
    Ok(())
}

/// Counts what is written to it.
#[derive(Default)]
struct ByteCount(u64);

impl Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `value` as one line of JSON; when it is large, its size is said on stderr first (measured
/// by writing it once to nowhere: no copy of hundreds of MB is kept to measure it).
fn json_line(out: &mut impl Write, value: &impl Serialize, cut_hint: bool) -> std::io::Result<()> {
    let mut size = ByteCount::default();
    serde_json::to_writer(&mut size, value).map_err(std::io::Error::from)?;
    if size.0 >= LARGE_OUTPUT_BYTES {
        let hint = if cut_hint { " (--layers and --heads print fewer)" } else { "" };
        eprintln!("attnviz: writing {} of JSON{hint}", human_bytes(size.0 + 1));
    }
    serde_json::to_writer(&mut *out, value).map_err(std::io::Error::from)?;
    writeln!(out)
}

/// What the model cannot do is refused before any work (a huge `--generate` ran 21 s and
/// printed 154 MB; one on an encoder was silently ignored).
fn check_range(model: &Model, args: &Args) -> Result<(), String> {
    let info = model.info();
    let (id, max, n) = (&model.manifest.id, info.max_positions, args.generate.max_new_tokens);
    if n > 0 && !info.generates {
        return Err(format!(
            "--generate: {id} does not generate text (only decoder-only models do)"
        ));
    }
    if n >= max {
        return Err(format!("--generate {n} is out of range for {id}: it reads at most {max} positions, the prompt's included (1 to {})", max - 1));
    }
    args.cut.check(id, &info)?;
    match args.command {
        Command::Positions { count, asked: true } if count == 0 || count > max => {
            Err(format!("--count {count} is out of range for {id}: 1 to {max} (its positions)"))
        }
        _ => Ok(()),
    }
}

fn run(args: Args) -> Result<(), String> {
    let model =
        Model::load_dir_variant(&args.model, args.weights.as_deref()).map_err(|e| e.to_string())?;
    check_range(&model, &args)?;
    let cut = &args.cut;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let id = model.manifest.id.as_str();
    let written = match args.command {
        Command::Attend { table, value_norms, lens } => {
            let start = Instant::now();
            let asks = Asks { value_norms, lens, ..Asks::default() };
            let (a, _) =
                model.attend_asking(&args.text, &args.generate, asks).map_err(|e| e.to_string())?;
            let ms = start.elapsed().as_secs_f64() * 1e3;
            if table {
                print_table(&mut out, id, &a, cut)
            } else {
                let mut result = AttendResult::new(id, &args.text, &a, ms, Cow::Borrowed);
                result.attentions = cut.blocks(result.attentions);
                result.value_norms = result.value_norms.map(|n| cut.blocks(n));
                json_line(&mut out, &result, true)
            }
        }
        Command::Step(request) => {
            let hi = model
                .head_internals_generating(&args.text, &args.generate, request)
                .map_err(|e| e.to_string())?;
            json_line(
                &mut out,
                &StepResult::new(id, &args.text, &hi, std::convert::identity),
                false,
            )
        }
        Command::Heads { table } => {
            let (a, mut scores) =
                model.heads(&args.text, &args.generate).map_err(|e| e.to_string())?;
            scores.retain(|s| cut.keeps(s));
            if table {
                print_heads(&mut out, id, &scores)
            } else {
                let result = HeadsResult::new(id, &args.text, &a, &scores, a.induction_tokens);
                json_line(&mut out, &result, true)
            }
        }
        Command::Positions { count, .. } => {
            let table = model.positions(count);
            json_line(&mut out, &PositionsResult::new(id, &table, std::convert::identity), false)
        }
    };
    written.and_then(|_| out.flush()).map_err(|e| format!("cannot write output: {e}"))
}

/// `attnviz serve …`: the page, pkg/ and models/ over HTTP ([`serve`], serve.rs beside this file).
fn serve(args: &[String]) -> Result<(), String> {
    let mut options = serve::Options {
        root: PathBuf::from("."),
        host: "127.0.0.1".into(),
        port: 8080,
        prefix: "/".into(),
        verbose: false,
    };
    let mut port_text = std::env::var("PORT").ok().filter(|p| !p.is_empty());
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value =
            || it.next().cloned().ok_or_else(|| format!("{flag} needs a value\n{USAGE}"));
        match flag.as_str() {
            "--port" => port_text = Some(value()?),
            "--host" => options.host = value()?,
            "--prefix" => options.prefix = value()?,
            "--root" => options.root = PathBuf::from(value()?),
            "--verbose" | "-v" => options.verbose = true,
            "--help" | "-h" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => return Err(format!("unknown option `{other}`\n{USAGE}")),
        }
    }
    if let Some(p) = port_text {
        options.port =
            p.parse().map_err(|_| format!("--port needs a number from 0 to 65535, not `{p}`"))?;
    }
    serve::run(options)
}

fn main() -> ExitCode {
    // `args()` would panic on an argument that is not UTF-8; name it instead.
    let args: Result<Vec<String>, String> = std::env::args_os()
        .skip(1)
        .enumerate()
        .map(|(i, a)| {
            a.into_string().map_err(|a| {
                format!("argument {} ({}) is not valid UTF-8", i + 1, a.to_string_lossy())
            })
        })
        .collect();
    let done = args.and_then(|a| match a.first().map(String::as_str) {
        Some("serve") => serve(&a[1..]),
        _ => match parse(&a)? {
            Some(args) => run(args),
            None => {
                println!("{USAGE}");
                Ok(())
            }
        },
    });
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("attnviz: {}", printable(msg.lines().next().unwrap_or("error")));
            for extra in msg.lines().skip(1) {
                eprintln!("{}", printable(extra));
            }
            ExitCode::from(2)
        }
    }
}

/// `line` with its control characters escaped (`\u{1b}`): a message may quote an argument or a
/// file's name, and an escape sequence in one would reach the terminal and act there.
fn printable(line: &str) -> String {
    line.chars()
        .map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() })
        .collect()
}
