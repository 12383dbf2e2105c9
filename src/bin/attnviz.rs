//! `attnviz attend --model <dir> --text <TEXT> [--format json|table] [--head KIND:LAYER:HEAD]`
//!
//! Runs one forward natively and prints the attention (JSON for machines, a per-head summary
//! for people). Bad input → one line on stderr and exit status 2.

use attnviz::attention::{row_entropies, top_keys, AttentionKind, ForwardOutput, HeadRequest};
use attnviz::models::Model;
use attnviz::output::AttendJson;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: attnviz attend --model <dir> --text <TEXT> [--format json|table]";

struct Args {
    model: PathBuf,
    text: String,
    table: bool,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let mut it = args.iter();
    match it.next().map(String::as_str) {
        Some("attend") => {}
        Some("--help") | Some("-h") | None => return Err(USAGE.into()),
        Some(other) => return Err(format!("unknown command `{other}`\n{USAGE}")),
    }
    let (mut model, mut text, mut table) = (None, None, false);
    while let Some(flag) = it.next() {
        let mut value = || it.next().cloned().ok_or_else(|| format!("{flag} needs a value\n{USAGE}"));
        match flag.as_str() {
            "--model" => model = Some(PathBuf::from(value()?)),
            "--text" => text = Some(value()?),
            "--format" => match value()?.as_str() {
                "json" => table = false,
                "table" => table = true,
                f => return Err(format!("unknown format `{f}` (json or table)")),
            },
            "--help" | "-h" => return Err(USAGE.into()),
            other => return Err(format!("unknown option `{other}`\n{USAGE}")),
        }
    }
    Ok(Args { model: model.ok_or_else(|| format!("--model is required\n{USAGE}"))?, text: text.ok_or_else(|| format!("--text is required\n{USAGE}"))?, table })
}

fn print_table(out: &mut impl Write, model_id: &str, f: &ForwardOutput) -> std::io::Result<()> {
    writeln!(out, "model {model_id}: {} source tokens, {} target tokens{}", f.source_tokens.len(), f.target_tokens.len(), if f.truncated { " (input truncated)" } else { "" })?;
    if let Some(t) = &f.output_text {
        let reason = f.stop_reason.map(|r| format!("{r:?}").to_lowercase()).unwrap_or_default();
        writeln!(out, "output: {t}  [stopped: {reason}]")?;
    }
    for b in &f.attentions {
        let (queries, keys) = match b.kind {
            AttentionKind::Cross => (&f.target_tokens, &f.source_tokens),
            _ => (&f.source_tokens, &f.source_tokens),
        };
        writeln!(out, "\n== {} layer {} ({} heads, {}×{})", b.kind.as_str(), b.layer, b.heads, b.query_len, b.key_len)?;
        for h in 0..b.heads {
            let ent = row_entropies(b, h);
            let mean_ent = ent.iter().sum::<f32>() / ent.len().max(1) as f32;
            writeln!(out, "  head {h}  mean entropy {mean_ent:.2} nats")?;
            for (q, qt) in queries.iter().enumerate().take(b.query_len) {
                let tops: Vec<String> = top_keys(b.row(h, q), 3).into_iter().map(|(k, w)| format!("{} {:.2}", keys.get(k).map(String::as_str).unwrap_or("?"), w)).collect();
                writeln!(out, "    {qt:>14} → {}", tops.join(", "))?;
            }
        }
    }
    Ok(())
}

fn run(args: Args) -> Result<(), String> {
    let model = Model::load_dir(&args.model).map_err(|e| e.to_string())?;
    let f = model.forward(&args.text, None::<HeadRequest>).map_err(|e| e.to_string())?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let id = model.manifest.id.as_str();
    let written = if args.table {
        print_table(&mut out, id, &f)
    } else {
        serde_json::to_writer(&mut out, &AttendJson::new(id, &args.text, &f)).map_err(std::io::Error::from).and_then(|_| writeln!(out))
    };
    written.and_then(|_| out.flush()).map_err(|e| format!("cannot write output: {e}"))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match parse(&args).and_then(run) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("attnviz: {}", msg.lines().next().unwrap_or("error"));
            for extra in msg.lines().skip(1) {
                eprintln!("{extra}");
            }
            ExitCode::from(2)
        }
    }
}
