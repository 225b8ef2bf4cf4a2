//! Code files are cut into whole units — a function, a class method, a struct
//! with its doc comment and attributes — never in the middle of one (as the
//! Librarian skill's search backend puts it, 20 lines of a 50-line script are
//! broken: useless to an agent).
//!
//! There is no parser per language in the sandbox; instead a small scanner
//! follows brackets, strings and comments well enough to tell where a
//! top-level item starts: a line at the outer bracket depth and indentation
//! that is not a continuation (`}`, `else`, `where`, `end`, …). Comments,
//! attributes and decorators directly above an item belong to it. Containers
//! (`impl`, `class`, `trait`, `mod`, …) too big for one chunk are split into
//! their members the same way, one level in. Small neighbouring units are
//! packed together up to the chunk size; a unit bigger than that stays whole.
//! Only a unit beyond [`MAX_UNIT_BYTES`] (generated or minified code) is cut
//! into windows like prose.

use crate::indexing::chunk::{Sizes, Span, chunk};

/// Metadata that marks a code file indexed in whole units. Its value names
/// the cut: changed when code is cut differently, so that files cut the old
/// way are cut and embedded again by the next index run (their old chunks
/// stay searchable until then). `code-2`: a function whose first line names a
/// container word (`fn f(x: impl Trait)`) is no longer split as a container.
pub const MARKER: (&str, &str) = ("ragbox.index", "code-2");
/// A unit bigger than this is cut into windows rather than returned whole.
pub const MAX_UNIT_BYTES: usize = 24 * 1024;
/// Nesting levels a container is split into at most (module → class → method).
const MAX_LEVELS: usize = 3;

/// A piece of a code file to embed and return whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeChunk {
    /// Byte range in the file.
    pub span: Span,
    /// The enclosing container's first line (`impl Sizes {`, `class Foo(Base):`)
    /// for members of a split container; empty at the top level.
    pub context: String,
}

/// The lexical rules the scanner needs for one language.
#[derive(Debug, Clone, Copy)]
struct Syntax {
    line_comments: &'static [&'static str],
    /// `/* … */` comments.
    block_comments: bool,
    single_quote: Quote,
    /// Backtick strings (JS templates, Go raw strings, shell).
    backticks: bool,
    /// Python's `"""` and `'''`.
    triple_quotes: bool,
    /// `"…"` may run over several lines (Rust, shell, Ruby, …).
    multiline_strings: bool,
    /// Blocks are marked by indentation (Python) or keywords (Ruby, Lua), not brackets.
    indented_blocks: bool,
}

/// What `'` means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Quote {
    /// A string delimiter.
    String,
    /// A character literal (`'x'`); otherwise a lifetime or label (Rust).
    Char,
}

fn syntax_for(path: &str) -> Syntax {
    let name = path.rsplit('/').next().unwrap_or(path);
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    let c_like = Syntax {
        line_comments: &["//"],
        block_comments: true,
        single_quote: Quote::Char,
        backticks: false,
        triple_quotes: false,
        multiline_strings: false,
        indented_blocks: false,
    };
    match ext.as_str() {
        "rs" => Syntax { multiline_strings: true, ..c_like },
        "go" => Syntax { backticks: true, ..c_like },
        "js" | "mjs" | "cjs" | "ts" | "tsx" | "jsx" | "vue" | "svelte" => {
            Syntax { single_quote: Quote::String, backticks: true, ..c_like }
        }
        "php" => Syntax { line_comments: &["//", "#"], single_quote: Quote::String, multiline_strings: true, ..c_like },
        "dart" | "scss" => Syntax { single_quote: Quote::String, ..c_like },
        "css" => Syntax { line_comments: &[], single_quote: Quote::String, ..c_like },
        "py" => Syntax {
            line_comments: &["#"],
            block_comments: false,
            single_quote: Quote::String,
            backticks: false,
            triple_quotes: true,
            multiline_strings: false,
            indented_blocks: true,
        },
        "rb" | "ex" | "exs" | "jl" | "r" => Syntax {
            line_comments: &["#"],
            block_comments: false,
            single_quote: Quote::String,
            backticks: false,
            triple_quotes: ext != "rb" && ext != "r",
            multiline_strings: true,
            indented_blocks: true,
        },
        "sh" | "bash" | "zsh" | "fish" => Syntax {
            line_comments: &["#"],
            block_comments: false,
            single_quote: Quote::String,
            backticks: true,
            triple_quotes: false,
            multiline_strings: true,
            indented_blocks: true,
        },
        "lua" | "sql" | "hs" => Syntax {
            line_comments: &["--"],
            block_comments: ext == "sql",
            single_quote: if ext == "hs" { Quote::Char } else { Quote::String },
            backticks: false,
            triple_quotes: false,
            multiline_strings: ext != "hs",
            indented_blocks: ext != "sql",
        },
        _ => c_like,
    }
}

/// Where the scanner is at a line's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Code,
    BlockComment,
    Str(u8),
    Triple(u8),
}

/// One line as the scanner saw it.
#[derive(Debug, Clone, Copy)]
struct Line {
    start: usize,
    end: usize,
    /// Bracket depth and state at the line's start.
    depth: i32,
    state: State,
    indent: usize,
    blank: bool,
}

/// Splits `text` into lines and follows brackets, strings and comments across them.
fn scan(text: &str, syntax: Syntax) -> Vec<Line> {
    // The bytes that can change the state in code; every other byte is skipped
    // without a look (the scanner reads whole trees of code before they are searchable).
    let mut special = [false; 256];
    for b in [b'"', b'\'', b'{', b'(', b'[', b'}', b')', b']'] {
        special[usize::from(b)] = true;
    }
    special[usize::from(b'/')] = syntax.block_comments;
    special[usize::from(b'`')] = syntax.backticks;
    for comment in syntax.line_comments {
        if let Some(&first) = comment.as_bytes().first() {
            special[usize::from(first)] = true;
        }
    }
    scan_lines(text, syntax, |line, state, depth| {
        let mut i = 0;
        while i < line.len() {
            // Each arm moves `i` to the next byte that matters in its state, or ends the line.
            match *state {
                State::BlockComment => {
                    let Some(at) = find_byte(line, i, |b| b == b'*') else { break };
                    if line[at..].starts_with(b"*/") {
                        *state = State::Code;
                        i = at + 2;
                    } else {
                        i = at + 1;
                    }
                }
                State::Str(q) => {
                    let Some(at) = find_byte(line, i, |b| b == b'\\' || b == q) else { break };
                    if line[at] == b'\\' {
                        i = at + 2;
                    } else {
                        *state = State::Code;
                        i = at + 1;
                    }
                }
                State::Triple(q) => {
                    let Some(at) = find_byte(line, i, |b| b == b'\\' || b == q) else { break };
                    if line[at] == b'\\' {
                        i = at + 2;
                    } else if line[at..].starts_with(&[q, q, q]) {
                        *state = State::Code;
                        i = at + 3;
                    } else {
                        i = at + 1;
                    }
                }
                State::Code => {
                    let Some(at) = find_byte(line, i, |b| special[usize::from(b)]) else { break };
                    let Some(taken) = step_in_code(&line[at..], syntax, state, depth) else { break };
                    i = at + taken;
                }
            }
        }
    })
}

/// Splits `text` into lines; `read` follows each line from the state and
/// bracket depth the line before left.
fn scan_lines(text: &str, syntax: Syntax, mut read: impl FnMut(&[u8], &mut State, &mut i32)) -> Vec<Line> {
    let bytes = text.as_bytes();
    let mut lines = Vec::new();
    let (mut depth, mut state) = (0i32, State::Code);
    let mut start = 0;
    while start < bytes.len() {
        let end = bytes[start..].iter().position(|&b| b == b'\n').map_or(bytes.len(), |i| start + i + 1);
        let line = &bytes[start..end];
        let indent = line.iter().take_while(|b| matches!(b, b' ' | b'\t')).count();
        // Unicode whitespace too (a lone vertical tab or U+2028 is a blank line), as `role` trims it.
        let blank = text[start..end].trim().is_empty();
        let (line_depth, line_state) = (depth, state);
        read(line, &mut state, &mut depth);
        // Single-line strings end with their line, so one unbalanced quote cannot swallow the file.
        if let State::Str(q) = state
            && (q == b'\'' || !syntax.multiline_strings)
            && q != b'`'
        {
            state = State::Code;
        }
        lines.push(Line { start, end, depth: line_depth, state: line_state, indent, blank });
        start = end;
    }
    lines
}

/// One step through code at `rest`'s first byte: the bytes it takes (a
/// comment's or string's opening, a character literal), or `None` where a
/// line comment starts, which ends the line.
fn step_in_code(rest: &[u8], syntax: Syntax, state: &mut State, depth: &mut i32) -> Option<usize> {
    if syntax.line_comments.iter().any(|c| rest.starts_with(c.as_bytes())) {
        return None;
    }
    let mut taken = 1;
    match rest[0] {
        b'/' if syntax.block_comments && rest.starts_with(b"/*") => {
            *state = State::BlockComment;
            taken = 2;
        }
        q @ (b'"' | b'\'') if syntax.triple_quotes && rest.starts_with(&[q, q, q]) => {
            *state = State::Triple(q);
            taken = 3;
        }
        b'"' => *state = State::Str(b'"'),
        b'`' if syntax.backticks => *state = State::Str(b'`'),
        b'\'' => match syntax.single_quote {
            Quote::String => *state = State::Str(b'\''),
            Quote::Char => taken += char_literal_len(rest),
        },
        b'{' | b'(' | b'[' => *depth += 1,
        // Clamped: a stray closer must not push the rest of the file out of reach.
        b'}' | b')' | b']' => *depth = (*depth - 1).max(0),
        _ => {}
    }
    Some(taken)
}

/// The first byte of `line` from `from` on that is `wanted`.
fn find_byte(line: &[u8], from: usize, wanted: impl Fn(u8) -> bool) -> Option<usize> {
    line.get(from..)?.iter().position(|&b| wanted(b)).map(|p| from + p)
}

/// Bytes after the opening `'` to skip for a character literal (`'x'`,
/// `'\n'`, `'\u{1F600}'`); 0 when the quote is a lifetime or label.
fn char_literal_len(rest: &[u8]) -> usize {
    let body = &rest[1..];
    if body.first() == Some(&b'\\') {
        // The closing quote comes after the escaped character: `'\''`, `'\u{1F600}'`.
        return body.iter().skip(2).take(10).position(|&b| b == b'\'').map_or(0, |p| p + 3);
    }
    // One (possibly multi-byte) character, then the closing quote.
    let width = match body.first() {
        Some(&b) if b < 0x80 => 1,
        Some(&b) if b >= 0xF0 => 4,
        Some(&b) if b >= 0xE0 => 3,
        Some(_) => 2,
        None => return 0,
    };
    if body.get(width) == Some(&b'\'') { width + 1 } else { 0 }
}

/// How a line at the level being split relates to the items there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Starts an item.
    Start,
    /// Belongs to the next item: a comment, attribute or decorator.
    LeadIn,
    /// Continues the current item: a closer, `else`, `where`, `end`, …
    Continuation,
}

const CONTINUATION_WORDS: &[&str] = &[
    "end", "else", "elif", "elsif", "elseif", "except", "finally", "rescue", "ensure", "where", "fi", "done", "esac",
    "then", "do", "until", "catch",
];

fn role(line: &str, syntax: Syntax) -> Role {
    let t = line.trim();
    let Some(&first) = t.as_bytes().first() else { return Role::Continuation };
    if matches!(first, b'}' | b')' | b']' | b'{' | b'.') {
        return Role::Continuation;
    }
    let word: &str = t.split(|c: char| !c.is_ascii_alphanumeric() && c != '_').next().unwrap_or("");
    if CONTINUATION_WORDS.contains(&word) {
        return Role::Continuation;
    }
    let comment = syntax.line_comments.iter().any(|c| t.starts_with(c))
        || (syntax.block_comments && t.starts_with("/*"))
        || t.starts_with("#[")
        || t.starts_with("#![")
        || (first == b'@' && !t.contains('{'));
    if comment { Role::LeadIn } else { Role::Start }
}

/// Keywords that name what follows them.
const DEFINERS: &[&str] = &[
    "fn",
    "def",
    "class",
    "struct",
    "enum",
    "trait",
    "impl",
    "interface",
    "type",
    "func",
    "function",
    "module",
    "mod",
    "union",
    "const",
    "static",
    "let",
    "var",
    "val",
    "object",
    "record",
    "protocol",
    "extension",
    "namespace",
    "macro_rules!",
    "async",
    "defmodule",
    "defp",
    "local",
];
/// Definers whose items hold members worth splitting out when the item is too big.
const CONTAINERS: &[&str] = &[
    "impl",
    "trait",
    "class",
    "interface",
    "mod",
    "module",
    "namespace",
    "object",
    "protocol",
    "extension",
    "defmodule",
];

/// The item's keyword and name (`fn chunk`, `class Foo`, `impl Display for Span`),
/// when its first line defines something.
pub fn symbol(first_line: &str) -> Option<String> {
    let words: Vec<&str> = first_line.split_whitespace().collect();
    let at = words.iter().position(|w| {
        let w = bare(w);
        DEFINERS.contains(&w) && !matches!(w, "async" | "local")
    })?;
    // Only modifiers (`pub`, `export default`, `static`, `pub(crate)`) may come before the keyword.
    let modifier = |w: &&str| w.starts_with("pub(") || w.bytes().all(|b| b.is_ascii_lowercase());
    if at > 4 || !words[..at].iter().all(modifier) {
        return None;
    }
    let keyword = bare(words[at]);
    let rest = words[at + 1..].join(" ");
    let name = if keyword == "impl" {
        // `impl<T> Display for Span<T> {` → `Display for Span<T>`
        let rest = words[at..].join(" ");
        let rest = rest.strip_prefix("impl").unwrap_or(&rest);
        let rest = if rest.starts_with('<') { skip_generics(rest) } else { rest };
        rest.split(['{']).next().unwrap_or("").split(" where").next().unwrap_or("").trim().to_string()
    } else {
        rest.split(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '$' | '!' | '.' | '?'))).next()?.to_string()
    };
    (!name.is_empty()).then(|| format!("{keyword} {}", name.chars().take(80).collect::<String>()))
}

/// A word of a first line without what is glued to it: `impl<T>` → `impl`, `fn(` → `fn`.
fn bare(word: &str) -> &str {
    word.split(['<', '(', ':', '{']).next().unwrap_or(word)
}

fn skip_generics(s: &str) -> &str {
    let mut depth = 0;
    for (i, c) in s.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => {
                depth -= 1;
                if depth == 0 {
                    return &s[i + 1..];
                }
            }
            _ => {}
        }
    }
    s
}

/// Whether an item's first line opens a container: the line's first defining
/// keyword (past modifiers such as `async` or `static`, and Go's `type`) is
/// one. A container word further on names a parameter or a type, not the
/// item: a function `fn f(x: impl Trait)` or `def load(module):` split into
/// "members" loses its closing lines, and an agent gets a body cut off.
fn is_container(first_line: &str) -> bool {
    first_line
        .split_whitespace()
        .map(bare)
        .find(|w| DEFINERS.contains(w) && !matches!(*w, "async" | "local" | "static" | "const" | "type"))
        .is_some_and(|w| CONTAINERS.contains(&w))
}

/// An item found at one level: its lines (indices into the scan) and first line.
#[derive(Debug, Clone, Copy)]
struct Item {
    first: usize,
    start_line: usize,
    last: usize,
}

/// Items among `lines[from..to]` at bracket depth `depth` and indentation at most `indent`.
fn items(text: &str, lines: &[Line], from: usize, to: usize, depth: i32, indent: usize, syntax: Syntax) -> Vec<Item> {
    let mut out: Vec<Item> = Vec::new();
    let mut lead_in: Option<usize> = None;
    for (i, line) in lines.iter().enumerate().take(to).skip(from) {
        let at_level = line.depth == depth && line.state == State::Code && line.indent <= indent;
        if line.blank {
            if at_level {
                lead_in = None;
            }
            continue;
        }
        if !at_level {
            continue;
        }
        match role(&text[line.start..line.end], syntax) {
            Role::LeadIn => {
                lead_in.get_or_insert(i);
            }
            Role::Continuation => lead_in = None,
            Role::Start => {
                let first = lead_in.take().unwrap_or(i);
                if let Some(prev) = out.last_mut() {
                    prev.last = first - 1;
                }
                out.push(Item { first, start_line: i, last: to - 1 });
            }
        }
    }
    out
}

/// A unit before packing.
#[derive(Debug, Clone)]
struct Unit {
    span: Span,
    context: String,
    /// A container's head (`impl X {`): joined to its first member whatever the size.
    glue: bool,
    /// Too big for one chunk, with no members to split into.
    oversized: bool,
}

/// The byte span of lines `first..=last`, trimmed of whitespace at both ends
/// but keeping the first line's indentation, so a method reads as it stands.
fn span_of(text: &str, lines: &[Line], first: usize, last: usize) -> Option<Span> {
    let (start, end) = (lines[first].start, lines[last].end);
    let piece = &text[start..end];
    let trimmed = piece.trim();
    if trimmed.is_empty() {
        return None;
    }
    let lead = piece.len() - piece.trim_start().len();
    let line_start = text[..start + lead].rfind('\n').map_or(0, |p| p + 1).max(start);
    Some(Span { start: line_start, end: start + lead + trimmed.len() })
}

/// How [`split`] measures and bounds units.
struct Limits<'a> {
    tokens: &'a dyn Fn(Span) -> usize,
    sizes: Sizes,
    syntax: Syntax,
}

/// Splits lines `first..=last` into units at (`depth`, `indent`), going into
/// containers too big for one chunk. Items are looked for from line `from`
/// on; the lines before the first item form a head unit (a file's doc comment
/// and imports; a container's doc and first line(s), glued to its first member).
#[allow(clippy::too_many_arguments)]
fn split(
    text: &str,
    lines: &[Line],
    (first, from, last): (usize, usize, usize),
    (depth, indent): (i32, usize),
    context: &str,
    limits: &Limits,
    level: usize,
    out: &mut Vec<Unit>,
) {
    let found = items(text, lines, from, last + 1, depth, indent, limits.syntax);
    let head_end = found.first().map_or(last + 1, |f| f.first);
    if head_end > first
        && let Some(span) = span_of(text, lines, first, head_end - 1)
    {
        out.push(Unit { span, context: context.to_string(), glue: level > 0, oversized: false });
    }
    for item in found {
        let Some(span) = span_of(text, lines, item.first, item.last) else { continue };
        let start_line = &text[lines[item.start_line].start..lines[item.start_line].end];
        let big = (limits.tokens)(span) > limits.sizes.target;
        let members = (big && level < MAX_LEVELS && is_container(start_line))
            .then(|| members(text, lines, item, limits.syntax))
            .flatten();
        match members {
            Some((last, member_level)) => {
                let range = (item.first, item.start_line + 1, last);
                split(text, lines, range, member_level, start_line.trim(), limits, level + 1, out);
            }
            None => {
                let oversized = big && span.end - span.start > MAX_UNIT_BYTES;
                out.push(Unit { span, context: context.to_string(), glue: false, oversized });
            }
        }
    }
}

/// A container's last member line (its closing lines left out) and the
/// members' (depth, indentation): that of the first line inside one bracket
/// deeper or, for indented blocks, further indented. `None` when there is none.
fn members(text: &str, lines: &[Line], item: Item, syntax: Syntax) -> Option<(usize, (i32, usize))> {
    let outer = lines[item.start_line];
    let first = (item.start_line + 1..=item.last).find(|&i| {
        let l = &lines[i];
        !l.blank
            && l.state == State::Code
            && l.indent > outer.indent
            && (l.depth == outer.depth + 1 || (syntax.indented_blocks && l.depth == outer.depth))
    })?;
    // Closing lines (`}`, `end`) and comments back at the container's indentation are not a member's.
    let mut last = item.last;
    while last > first
        && (lines[last].blank
            || (lines[last].indent <= outer.indent
                && role(&text[lines[last].start..lines[last].end], syntax) != Role::Start))
    {
        last -= 1;
    }
    Some((last, (lines[first].depth, lines[first].indent)))
}

/// Cuts a code file into whole units, packs small neighbours up to
/// `sizes.target` tokens, and windows only what exceeds [`MAX_UNIT_BYTES`].
/// `token_starts` are the byte offsets where the text's tokens start.
pub fn chunks(path: &str, text: &str, token_starts: &[u32], sizes: Sizes) -> Vec<CodeChunk> {
    Code::scan(path, text).chunks(token_starts, sizes)
}

/// The symbols a file defines at its top level, in order (`fn chunk`, `class Foo`).
pub fn top_level_symbols(path: &str, text: &str) -> Vec<String> {
    Code::scan(path, text).top_level_symbols()
}

/// A code file scanned once: its chunks and its symbols read the same lines.
pub struct Code<'a> {
    text: &'a str,
    syntax: Syntax,
    lines: Vec<Line>,
}

impl<'a> Code<'a> {
    /// Scans `text` by the rules of `path`'s language.
    pub fn scan(path: &str, text: &'a str) -> Self {
        let syntax = syntax_for(path);
        Code { text, syntax, lines: scan(text, syntax) }
    }

    /// The file cut into whole units (see [`chunks`]).
    pub fn chunks(&self, token_starts: &[u32], sizes: Sizes) -> Vec<CodeChunk> {
        let Code { text, syntax, ref lines } = *self;
        if lines.is_empty() {
            return Vec::new();
        }
        // Token starts are in order: the tokens of a span are found by bisection.
        let index = |at: usize| token_starts.partition_point(|&t| (t as usize) < at);
        let tokens = |s: Span| index(s.end) - index(s.start);
        let limits = Limits { tokens: &tokens, sizes, syntax };
        let mut units = Vec::new();
        split(text, lines, (0, 0, lines.len() - 1), (0, 0), "", &limits, 0, &mut units);

        let mut out: Vec<CodeChunk> = Vec::new();
        let mut open: Option<(CodeChunk, bool)> = None;
        for unit in units {
            if unit.oversized {
                out.extend(open.take().map(|(c, _)| c));
                let piece = &text[unit.span.start..unit.span.end];
                let local: Vec<u32> = token_starts[index(unit.span.start)..index(unit.span.end)]
                    .iter()
                    .map(|&t| t - unit.span.start as u32)
                    .collect();
                out.extend(chunk(piece, &local, sizes).into_iter().map(|s| CodeChunk {
                    span: Span { start: unit.span.start + s.start, end: unit.span.start + s.end },
                    context: unit.context.clone(),
                }));
                continue;
            }
            open = match open {
                Some((mut o, glued))
                    if o.context == unit.context
                        && (glued || tokens(Span { start: o.span.start, end: unit.span.end }) <= sizes.target) =>
                {
                    o.span.end = unit.span.end;
                    Some((o, unit.glue))
                }
                prev => {
                    out.extend(prev.map(|(c, _)| c));
                    Some((CodeChunk { span: unit.span, context: unit.context }, unit.glue))
                }
            };
        }
        out.extend(open.map(|(c, _)| c));
        out
    }

    /// The symbols the file defines at its top level, in order.
    pub fn top_level_symbols(&self) -> Vec<String> {
        let Code { text, syntax, ref lines } = *self;
        items(text, lines, 0, lines.len(), 0, 0, syntax)
            .into_iter()
            .filter_map(|item| symbol(&text[lines[item.start_line].start..lines[item.start_line].end]))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::indexing::chunk::word_starts;

    /// The scanner as it was before it skipped to the bytes that matter: one
    /// step per byte (same lines, same steps through code). [`scan`] must read
    /// every file the same way.
    fn byte_by_byte(text: &str, syntax: Syntax) -> Vec<Line> {
        scan_lines(text, syntax, |line, state, depth| {
            let mut i = 0;
            while i < line.len() {
                let rest = &line[i..];
                match *state {
                    State::BlockComment => {
                        if rest.starts_with(b"*/") {
                            *state = State::Code;
                            i += 1;
                        }
                    }
                    State::Str(q) => {
                        if rest[0] == b'\\' {
                            i += 1;
                        } else if rest[0] == q {
                            *state = State::Code;
                        }
                    }
                    State::Triple(q) => {
                        if rest[0] == b'\\' {
                            i += 1;
                        } else if rest.starts_with(&[q, q, q]) {
                            *state = State::Code;
                            i += 2;
                        }
                    }
                    State::Code => {
                        let Some(taken) = step_in_code(rest, syntax, state, depth) else { break };
                        i += taken - 1;
                    }
                }
                i += 1;
            }
        })
    }

    #[test]
    fn the_scanner_skips_to_what_matters_and_reads_as_byte_by_byte() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let tricky = [
            "'",
            "\"",
            "'\\",
            "\"\\",
            "/*",
            "*/",
            "'''",
            "\"\"\"ab\"\"",
            "`x\\`",
            "--x",
            "#!",
            "a'b'c",
            "'\\u{1F600}' x",
            "\"é\\\né\"",
            "/* a\n b */ { ( [ ] ) }",
            "} } } { ",
            "x = '''\n'''\n\"\"\"\n",
            "\u{2028}\n\x0b\n",
            "'é' 'ab",
        ];
        let mut texts: Vec<String> = tricky.iter().map(|s| s.to_string()).collect();
        for dir in
            ["guest-tools/sdk/src", "engines/src/fulltext", "host/src/runtime", "bench", "scripts", "tests/conformance"]
        {
            for entry in std::fs::read_dir(root.join(dir)).expect("a source folder of the repository") {
                let path = entry.expect("a readable entry").path();
                if path.is_file()
                    && let Ok(text) = std::fs::read_to_string(&path)
                {
                    texts.push(text);
                }
            }
        }
        assert!(texts.len() > 40, "the repository's sources were read");
        let names =
            ["a.rs", "a.go", "a.js", "a.php", "a.css", "a.py", "a.rb", "a.jl", "a.sh", "a.lua", "a.sql", "a.hs", "a.c"];
        let key = |l: &Line| (l.start, l.end, l.depth, l.state, l.indent, l.blank);
        for text in &texts {
            for name in names {
                let syntax = syntax_for(name);
                let (fast, slow) = (scan(text, syntax), byte_by_byte(text, syntax));
                assert_eq!(
                    fast.iter().map(key).collect::<Vec<_>>(),
                    slow.iter().map(key).collect::<Vec<_>>(),
                    "{name}: {text:.80}"
                );
            }
        }
    }

    fn cut<'a>(path: &str, text: &'a str, target: usize) -> Vec<&'a str> {
        let sizes = Sizes { target, overlap: target / 8, min: target / 8 };
        chunks(path, text, &word_starts(text), sizes).into_iter().map(|c| &text[c.span.start..c.span.end]).collect()
    }

    const RUST: &str = r#"//! Module docs.

use std::fmt;

/// A span.
#[derive(Debug)]
pub struct Span {
    start: usize,
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let brace = '{';
        write!(f, "{}{brace}", self.start)
    }
}

/// Adds.
pub fn add<'a>(a: &'a str,
    b: usize,
) -> usize
where
    usize: Copy,
{
    let s = "}}} not a closer";
    a.len() + b + s.len()
}
"#;

    #[test]
    fn rust_items_stay_whole_with_their_docs() {
        let units = cut("src/lib.rs", RUST, 30);
        assert!(
            units[0]
                .starts_with("//! Module docs.\n\nuse std::fmt;\n\n/// A span.\n#[derive(Debug)]\npub struct Span {")
        );
        assert!(units[1].starts_with("impl fmt::Display for Span {") && units[1].ends_with("}\n}"), "{units:?}");
        assert!(units[2].starts_with("/// Adds.\npub fn add") && units[2].ends_with("s.len()\n}"), "{units:?}");
        assert_eq!(units.len(), 3);
        // Tighter: the impl is split into its methods, its first line leading the first one.
        let units = cut("src/lib.rs", RUST, 12);
        assert_eq!(units[0], "//! Module docs.\n\nuse std::fmt;");
        assert!(units[1].starts_with("/// A span.\n#[derive(Debug)]\npub struct Span {") && units[1].ends_with('}'));
        assert!(units[2].starts_with("impl fmt::Display for Span {\n    fn fmt("), "{units:?}");
        assert!(units[2].ends_with("self.start)\n    }"), "{units:?}");
        assert!(units[3].starts_with("/// Adds.\npub fn add") && units[3].ends_with("s.len()\n}"), "{units:?}");
        assert_eq!(units.len(), 4);
        // With room to spare, neighbours are packed, never cut.
        assert_eq!(cut("src/lib.rs", RUST, 1000), vec![RUST.trim()]);
    }

    #[test]
    fn big_containers_split_into_whole_members() {
        let py = "\"\"\"Tools.\n\nclass NotReal:\n\"\"\"\nimport os\n\n\nclass Walker(Base):\n    \"\"\"Walks.\"\"\"\n\n    def __init__(self, root):\n        self.root = root\n\n    @property\n    def name(self):\n        return os.path.basename(\n    self.root)\n\n    def walk(self):\n        for d in os.listdir(self.root):\n            yield d\n\n\nif __name__ == \"__main__\":\n    main()\n";
        let units = cut("tools/walk.py", py, 12);
        assert_eq!(units[0], "\"\"\"Tools.\n\nclass NotReal:\n\"\"\"\nimport os");
        assert_eq!(
            units[1],
            "class Walker(Base):\n    \"\"\"Walks.\"\"\"\n\n    def __init__(self, root):\n        self.root = root"
        );
        assert_eq!(units[2], "    @property\n    def name(self):\n        return os.path.basename(\n    self.root)");
        assert!(units[3].starts_with("    def walk(self):") && units[3].ends_with("yield d"));
        assert_eq!(units[4], "if __name__ == \"__main__\":\n    main()");
        let sizes = Sizes { target: 12, overlap: 1, min: 1 };
        let with_context = chunks("tools/walk.py", py, &word_starts(py), sizes);
        assert_eq!(with_context[2].context, "class Walker(Base):");
        assert_eq!(with_context[4].context, "");
    }

    #[test]
    fn a_big_function_naming_a_container_word_stays_whole() {
        // `impl` and `module` here are a parameter's type and name, not the item's keyword.
        let body = "        let x = names.into_iter().count();\n".repeat(8);
        let rust = format!(
            "impl Arg {{\n    pub fn value_names(self, names: impl IntoIterator<Item = Str>) -> Self {{\n{body}        self\n    }}\n\n    fn other(&self) {{}}\n}}\n"
        );
        let units = cut("src/arg.rs", &rust, 40);
        assert!(
            units.iter().any(|u| u.contains("    pub fn value_names(") && u.ends_with("        self\n    }")),
            "{units:?}"
        );
        let py = format!(
            "def load(module: str, strict=True):\n{}    return module\n\n\ndef other():\n    pass\n",
            "    x = module.split('.')\n".repeat(8)
        );
        let units = cut("a.py", &py, 20);
        assert!(units[0].starts_with("def load(") && units[0].ends_with("    return module"), "{units:?}");
        assert!(is_container("pub(crate) unsafe impl<T> Send for Wrapper<T> {"));
        assert!(is_container("export default class Walker extends Base {"));
        assert!(is_container("public static class Inner {"));
        assert!(is_container("type Reader interface {"));
        assert!(!is_container("pub const fn new(inner: impl Into<String>) -> Self {"));
        assert!(!is_container("async def fetch(self, module):"));
    }

    #[test]
    fn c_style_bodies_and_javascript_templates() {
        let c = "#include <stdio.h>\n\nint main(void)\n{\n    printf(\"}\\n\");\n    return 0;\n}\n\nstatic int two(void)\n{\n    return 2;\n}\n";
        let units = cut("a.c", c, 8);
        assert_eq!(
            units,
            vec![
                "#include <stdio.h>",
                "int main(void)\n{\n    printf(\"}\\n\");\n    return 0;\n}",
                "static int two(void)\n{\n    return 2;\n}"
            ]
        );
        let js = "const t = `\n}\nfunction fake() {\n`;\n\nexport function real(a) {\n  return a;\n}\n";
        let units = cut("a.js", js, 6);
        assert_eq!(units, vec!["const t = `\n}\nfunction fake() {\n`;", "export function real(a) {\n  return a;\n}"]);
    }

    #[test]
    fn oversized_units_are_windowed_and_the_rest_stays_whole() {
        let long = format!("fn huge() {{\n{}}}\n\nfn small() {{}}\n", "    let x = 1;\n".repeat(3000));
        let units = cut("a.rs", &long, 100);
        assert!(units.len() > 10);
        assert_eq!(units.last(), Some(&"fn small() {}"));
        assert!(units.iter().all(|u| u.len() < MAX_UNIT_BYTES));
    }

    #[test]
    fn symbols_name_what_a_file_defines() {
        assert_eq!(top_level_symbols("src/lib.rs", RUST), vec!["struct Span", "impl fmt::Display for Span", "fn add"]);
        assert_eq!(symbol("export default async function handler(req) {"), Some("function handler".into()));
        assert_eq!(
            symbol("impl<T: Copy> From<T> for Wrapper<T> where T: Eq {"),
            Some("impl From<T> for Wrapper<T>".into())
        );
        assert_eq!(symbol("class Walker(Base):"), Some("class Walker".into()));
        assert_eq!(symbol("main()"), None);
        assert_eq!(symbol("print(\"the class is\")"), None);
    }

    #[test]
    fn hostile_text_never_panics() {
        // "\n\u{b}" and "\u{2028}": whitespace to `trim` but not to ASCII checks (found by cargo fuzz).
        for text in [
            "",
            "\n\n",
            "}}}}",
            "'",
            "\"\"\"",
            "/*",
            "fn x() {",
            "é'",
            "'\\",
            "@",
            "#[",
            "\u{feff}x",
            "\n\u{b}",
            "\u{2028}",
        ] {
            for path in ["a.rs", "a.py", "a.js", "a.sql", "a.sh"] {
                let units = cut(path, text, 4);
                assert!(units.iter().all(|u| !u.trim().is_empty()));
            }
        }
    }
}
