//! ragbox's own BERT tokenizer against the `tokenizers` crate, on the model's
//! real `tokenizer.json`: the same ids and the same byte offsets for every
//! text, real ones (SciFact, tldr pages, skills, this repository's code, the
//! parity fixture's mixed scripts) and made ones (every code point, in blocks;
//! seeded mixtures of what BertNormalizer treats specially; the special
//! tokens written in the text). Needs the model: `make setup` fetches it.

use ragbox::embed::wordpiece::{Token, WordPiece};
use ragbox::embed::{ModelDir, default_model_dir};
use std::path::{Path, PathBuf};

fn tokenizer_json() -> Vec<u8> {
    let dir =
        ModelDir::open(&default_model_dir().expect("a home folder or RAGBOX_MODEL")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::read(dir.path.join("tokenizer.json")).expect("tokenizer.json")
}

fn library(json: &[u8]) -> tokenizers::Tokenizer {
    let mut t = tokenizers::Tokenizer::from_bytes(json).expect("the crate reads it");
    t.with_truncation(None).expect("no truncation");
    t.with_padding(None);
    t
}

fn shared_data() -> PathBuf {
    std::env::var_os("RAGBOX_DATA")
        .map_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data"), PathBuf::from)
}

/// Compares one text; the first difference, described, if any.
fn differs(native: &WordPiece, library: &tokenizers::Tokenizer, text: &str) -> Option<String> {
    let want = library.encode(text, false).expect("the crate encodes");
    let mut got: Vec<Token> = Vec::new();
    native.tokens(text, |t| got.push(t));
    let want: Vec<Token> = want
        .get_ids()
        .iter()
        .zip(want.get_offsets())
        .map(|(&id, &(start, end))| Token { id, start: start as u32, end: end as u32 })
        .collect();
    if got != want {
        let at = got.iter().zip(&want).position(|(g, w)| g != w).unwrap_or(got.len().min(want.len()));
        let around = |v: &[Token]| v[at.saturating_sub(2)..(at + 3).min(v.len())].to_vec();
        return Some(format!(
            "{} tokens against {}; from token {at}: ours {:?}, the crate's {:?}",
            got.len(),
            want.len(),
            around(&got),
            around(&want)
        ));
    }
    let with = library.encode(text, true).expect("the crate encodes");
    (native.ids(text, true) != with.get_ids()).then(|| "the special tokens differ".to_string())
}

fn check_all<'a>(what: &str, texts: impl IntoIterator<Item = &'a str>) -> usize {
    let json = tokenizer_json();
    let native = WordPiece::from_json(&json).expect("the default model's tokenizer is BERT's WordPiece");
    let library = library(&json);
    let mut count = 0;
    for text in texts {
        if let Some(difference) = differs(&native, &library, text) {
            let shown: String = text.chars().take(200).collect();
            panic!("{what}: text {count} ({shown:?}…): {difference}");
        }
        count += 1;
    }
    count
}

#[test]
fn real_text_tokenizes_as_the_crate_does() {
    let data = shared_data();
    let corpus = std::fs::read_to_string(data.join("scifact/corpus.jsonl")).expect("SciFact in ../shared/data");
    let abstracts: Vec<String> = corpus
        .lines()
        .step_by(5)
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            format!("{}\n\n{}", v["title"].as_str().unwrap_or(""), v["text"].as_str().unwrap_or(""))
        })
        .collect();
    assert!(check_all("SciFact", abstracts.iter().map(String::as_str)) > 1000);

    let mut files = Vec::new();
    let tldr = data.join("tldr/common");
    let mut pages: Vec<PathBuf> = std::fs::read_dir(&tldr).expect("tldr pages").map(|e| e.unwrap().path()).collect();
    pages.sort();
    files.extend(pages.into_iter().step_by(7));
    let mut skills = Vec::new();
    collect(&data.join("skills"), "md", &mut skills);
    skills.sort();
    files.extend(skills.into_iter().step_by(3).take(400));
    let mut code = Vec::new();
    collect(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), "rs", &mut code);
    files.extend(code);
    let texts: Vec<String> = files.iter().filter_map(|f| std::fs::read_to_string(f).ok()).collect();
    assert!(check_all("pages, skills and code", texts.iter().map(String::as_str)) > 1000);

    #[derive(serde::Deserialize)]
    struct Fixture {
        texts: Vec<String>,
    }
    let fixture: Fixture = serde_json::from_str(include_str!("fixtures/minilm_parity.json")).expect("fixture parses");
    check_all("the parity fixture", fixture.texts.iter().map(String::as_str));
}

fn collect(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, ext, out);
        } else if path.extension().is_some_and(|e| e == ext) {
            out.push(path);
        }
    }
}

#[test]
fn every_code_point_tokenizes_as_the_crate_does() {
    // Blocks of 128 code points, alone and with letters between (so that
    // marks, punctuation and ideographs meet words on both sides).
    let blocks: Vec<String> = (0..0x11_0000u32)
        .step_by(128)
        .flat_map(|from| {
            let chars: Vec<char> = (from..from + 128).filter_map(char::from_u32).collect();
            let alone: String = chars.iter().collect();
            let between: String = chars.iter().flat_map(|&c| ['a', c]).collect();
            [alone, between]
        })
        .collect();
    assert!(check_all("code points", blocks.iter().map(String::as_str)) > 17_000);
}

#[test]
fn mixtures_and_written_special_tokens_tokenize_as_the_crate_does() {
    const PARTS: &[&str] = &[
        "word",
        "Wörter",
        "İstanbul",
        "straße",
        "ΣΊΣΥΦΟΣ",
        "naïve",
        "e\u{301}",
        "a\u{316}\u{301}",
        "\u{f900}",
        "中文字",
        "日本語のテキスト",
        "한국어",
        "\u{ac00}\u{11a8}",
        " ",
        "\t",
        "\n",
        "\r\n",
        "\u{a0}",
        "\u{2003}",
        "\u{3000}",
        "\u{200b}",
        "\u{200d}",
        "\u{feff}",
        "\u{0}",
        "\u{fffd}",
        "\u{7}",
        "\u{85}",
        "\u{e000}",
        "👩‍👩‍👧",
        "🦀",
        "x̸",
        "[CLS]",
        "[SEP]",
        "[MASK]",
        "[UNK]",
        "[PAD]",
        "[CL",
        "S]",
        "[[SEP]]",
        "##",
        "##ing",
        "getUserName",
        "snake_case",
        "--flag=1",
        "path/to/file.rs",
        "3.14",
        "1,000",
        "¿",
        "¡",
        "«»",
        "—",
        "…",
        "'",
        "\"",
        "`",
        "ﬁ",
        "Ⅻ",
        "①",
        "ǅ",
        "ΐ",
        "ẞ",
        "ꞵ",
        "\u{1e9e}",
        "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
    ];
    let long = "a".repeat(100);
    let longer = "é".repeat(101);
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let texts: Vec<String> = (0..3000)
        .map(|_| {
            let n = 1 + (next() % 24) as usize;
            let mut text = String::new();
            for _ in 0..n {
                match next() % 40 {
                    0 => text.push_str(&long),
                    1 => text.push_str(&longer),
                    k => text.push_str(PARTS[(next() as usize + k as usize) % PARTS.len()]),
                }
            }
            text
        })
        .collect();
    check_all("mixtures", texts.iter().map(String::as_str));
    check_all("edges", ["", " ", "[CLS]", "[CLS][SEP]", "a[SEP]b", "\u{0}", "\u{fffd}", &long, &longer]);
}

#[test]
fn other_shapes_are_left_to_the_crate() {
    let json: serde_json::Value = serde_json::from_slice(&tokenizer_json()).expect("JSON");
    assert!(WordPiece::from_json(&serde_json::to_vec(&json).expect("JSON")).is_some());
    let changed = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut json = json.clone();
        edit(&mut json);
        WordPiece::from_json(&serde_json::to_vec(&json).expect("JSON"))
    };
    assert!(changed(&|j| j["normalizer"]["type"] = "Lowercase".into()).is_none());
    assert!(changed(&|j| j["pre_tokenizer"]["type"] = "Whitespace".into()).is_none());
    assert!(changed(&|j| j["pre_tokenizer"] = serde_json::Value::Null).is_none());
    assert!(changed(&|j| j["model"]["type"] = "BPE".into()).is_none());
    assert!(changed(&|j| j["added_tokens"][0]["lstrip"] = true.into()).is_none());
    assert!(changed(&|j| j["added_tokens"][1]["normalized"] = true.into()).is_none());
    assert!(changed(&|j| j["post_processor"]["type"] = "RobertaProcessing".into()).is_none());
    assert!(changed(&|j| j["model"]["unk_token"] = "<not in the vocabulary>".into()).is_none());
    // A post-processor of BERT's older form reads the same.
    let bert = changed(&|j| {
        j["post_processor"] =
            serde_json::json!({"type": "BertProcessing", "sep": ["[SEP]", 102], "cls": ["[CLS]", 101]})
    })
    .expect("BertProcessing");
    assert_eq!(bert.ids("word", true), [101, 2773, 102]);
    assert_eq!(bert.specials(), (1, 1));
}
