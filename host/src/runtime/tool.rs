//! A loaded tool component and how one call to it runs and fails.

use super::bindings::ragbox::tools::types::{CallError, ToolInfo};
use super::bindings::{Tool, ToolPre};
use super::component::{Source, check_wit_version};
use super::guard::Interrupt;
use super::linked::{Linked, Relink};
use super::sandbox::{CallEnv, HostState, new_store};
use super::stages::Stage;
use super::{RuntimeError, capabilities_linker};
use crate::config::{Grants, Limits};
use std::sync::Arc;
use std::time::Duration;
use wasmtime::Engine;
use wasmtime::component::Component;

/// A compiled, linked component and its description.
#[derive(Clone)]
pub struct LoadedTool {
    /// What `describe()` returned, validated.
    pub info: Arc<ToolInfo>,
    /// Where the component came from.
    pub source: Source,
    /// sha256 of the component bytes, hex.
    pub sha256: String,
    name: Arc<str>,
    engine: Engine,
    pre: Arc<Linked<ToolPre<HostState>>>,
    /// A third-party tool's input schema, compiled: the host checks its
    /// arguments before it runs. Built-in tools check their own and answer in
    /// their seed's error shape.
    input: Option<Arc<jsonschema::Validator>>,
}

/// How a call ended.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// The tool answered; JSON text.
    Ok(String),
    /// The tool reported an error in its own shape.
    ToolError {
        /// True when the arguments were at fault.
        invalid_arguments: bool,
        /// The error body the client sees.
        body: String,
    },
    /// The host stopped the call or could not run it.
    Failed(Failure),
}

impl Outcome {
    /// How the call ended, in a word: `ok`, `tool-error`, `invalid-arguments`, or the host's failure.
    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Ok(_) => "ok",
            Outcome::ToolError { invalid_arguments: true, .. } => "invalid-arguments",
            Outcome::ToolError { .. } => "tool-error",
            Outcome::Failed(failure) => match failure {
                Failure::Timeout { .. } => "timeout",
                Failure::Cancelled { .. } => "cancelled",
                Failure::OutOfMemory { .. } => "out-of-memory",
                Failure::ArgumentsTooLarge { .. } => "arguments-too-large",
                Failure::OutputTooLarge { .. } => "output-too-large",
                Failure::Crashed { .. } => "crashed",
                Failure::BadResult { .. } => "bad-result",
                Failure::Setup { .. } => "setup",
            },
        }
    }
}

/// Why the host stopped a call; the message is what the client sees.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Failure {
    /// Ran past its wall-clock limit.
    #[error("tool '{tool}' was stopped after {secs:.1} s: it exceeded its time limit of {limit_secs} s \
             (raise [limits] timeout_secs or [tools.{tool}] timeout_secs in your config, {config})",
             secs = elapsed.as_secs_f64(), limit_secs = limit.as_secs(), config = crate::config::user_config_shown())]
    Timeout {
        /// The tool.
        tool: String,
        /// Time it ran.
        elapsed: Duration,
        /// Its limit.
        limit: Duration,
    },
    /// The client cancelled it.
    #[error("tool '{tool}' was cancelled by the client")]
    Cancelled {
        /// The tool.
        tool: String,
    },
    /// Tried to grow memory past its limit.
    #[error(
        "tool '{tool}' ran out of memory: it asked for {asked_mib} MiB, over its limit of {limit_mib} MiB \
             (raise [limits] memory_mib in your config, {config})",
        config = crate::config::user_config_shown()
    )]
    OutOfMemory {
        /// The tool.
        tool: String,
        /// What the denied growth asked for, MiB.
        asked_mib: usize,
        /// The limit, MiB.
        limit_mib: usize,
    },
    /// Sent more arguments than a call may carry.
    #[error(
        "the arguments to tool '{tool}' are {size_kib} KiB, over the {limit_kib} KiB a call may send; \
         send less (a query is a few words, a reference text a few pages)"
    )]
    ArgumentsTooLarge {
        /// The tool.
        tool: String,
        /// Their size, KiB.
        size_kib: usize,
        /// The limit, KiB.
        limit_kib: usize,
    },
    /// Returned more than the output limit.
    #[error("tool '{tool}' returned {size_mib:.1} MiB, over the {limit_mib} MiB result limit; result discarded")]
    OutputTooLarge {
        /// The tool.
        tool: String,
        /// Size returned, MiB.
        size_mib: f64,
        /// The limit, MiB.
        limit_mib: usize,
    },
    /// Trapped (panicked, hit `unreachable`, ...).
    #[error("tool '{tool}' crashed: {reason}")]
    Crashed {
        /// The tool.
        tool: String,
        /// The trap and the guest's panic message or last stderr lines.
        reason: String,
    },
    /// Returned text that is not the JSON its output schema promises.
    #[error("tool '{tool}' returned an invalid result: {reason}")]
    BadResult {
        /// The tool.
        tool: String,
        /// What is wrong.
        reason: String,
    },
    /// The host could not set the call up.
    #[error("tool '{tool}' could not be started: {reason}")]
    Setup {
        /// The tool.
        tool: String,
        /// Why.
        reason: String,
    },
}

/// Links `component` to the tool world's host interfaces, once its WIT
/// version is one this host serves.
pub(super) fn link(
    engine: &Engine,
    component: &Component,
    source_name: &str,
) -> Result<ToolPre<HostState>, RuntimeError> {
    let link_error = |message: String| RuntimeError::Link { source_name: source_name.to_string(), message };
    check_wit_version(engine, component).map_err(link_error)?;
    let linker = capabilities_linker(engine).map_err(|e| link_error(format!("{e:#}")))?;
    linker.instantiate_pre(component).and_then(ToolPre::new).map_err(|e| {
        let imports = component.component_type().imports(engine).map(|(name, _)| name.to_string()).collect::<Vec<_>>();
        match network_import(&imports) {
            Some(fix) => link_error(format!("{e:#}; {fix}")),
            None => link_error(format!("{e:#}")),
        }
    })
}

impl LoadedTool {
    /// Links `component`, runs `describe()` in a sandbox and validates it.
    pub fn new(
        engine: &Engine,
        component: &Component,
        source: Source,
        sha256: String,
        describe_limits: &Limits,
    ) -> Result<Self, RuntimeError> {
        let source_name = source.to_string();
        let pre = link(engine, component, &source_name)?;
        let describe_err = |message: String| RuntimeError::Describe { source_name: source_name.clone(), message };
        // describe() gets no workspace: it must not depend on files.
        let env = CallEnv::refused("describe() runs without a workspace".into());
        let mut store = new_store(engine, Arc::from("(describe)"), env, describe_limits).map_err(describe_err)?;
        let info = pre
            .instantiate(&mut store)
            .and_then(|tool: Tool| tool.call_describe(&mut store))
            .map_err(|e| describe_err(format!("{e:#}")))?;
        validate_info(&info).map_err(describe_err)?;
        let input = match source {
            Source::BuiltIn(_) => None,
            _ => Some(Arc::new(input_validator(&info.input_schema).map_err(describe_err)?)),
        };
        Ok(Self {
            name: Arc::from(info.name.as_str()),
            info: Arc::new(info),
            source,
            sha256,
            engine: engine.clone(),
            pre: Arc::new(Linked::held(pre)),
            input,
        })
    }

    /// Lets go of the linked component until the tool's next call, which
    /// `relink` makes it for (a built-in, from the compile cache).
    pub(super) fn link_on_demand(&mut self, relink: Relink<ToolPre<HostState>>) {
        self.pre = Arc::new(Linked::on_demand(relink));
    }

    /// Links the component now if it was let go, so that its next call does
    /// not; an error is left for that call to report.
    pub fn link(&self) -> Result<(), String> {
        self.pre.get().map(drop)
    }

    /// Whether its linked component is held now (else its next call loads it).
    pub fn is_linked(&self) -> bool {
        self.pre.is_held()
    }

    /// Checks `arguments` against the tool's own input schema (third-party
    /// tools only): `Err` names each wrong field, for the caller to fix.
    pub fn check_arguments(&self, arguments: &serde_json::Value) -> Result<(), String> {
        let Some(validator) = &self.input else { return Ok(()) };
        let problems: Vec<String> = validator
            .iter_errors(arguments)
            .take(MAX_ARGUMENT_PROBLEMS)
            .map(|e| match e.instance_path().to_string() {
                at if at.is_empty() => e.to_string(),
                at => format!("{at}: {e}"),
            })
            .collect();
        if problems.is_empty() {
            return Ok(());
        }
        Err(format!(
            "invalid arguments for tool '{}': {} (its inputSchema in tools/list says what it takes)",
            self.name,
            problems.join("; ")
        ))
    }

    /// The tool's MCP name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// True when the tool says it changes nothing (read-only annotation).
    pub fn read_only(&self) -> bool {
        self.info.annotations.read_only
    }

    /// True for a built-in tool that writes the index: it gets the indexing time limit.
    pub fn indexing(&self) -> bool {
        matches!(self.source, Source::BuiltIn(_)) && !self.read_only()
    }

    /// What the tool may do when config says nothing: built-in tools that
    /// declare they write get `corpus-write`; anything else only reads.
    pub fn default_grants(&self) -> Grants {
        Grants { corpus_write: matches!(self.source, Source::BuiltIn(_)) && !self.read_only(), read_dirs: Vec::new() }
    }

    /// Runs one call in a fresh sandbox. Blocks: call it from a blocking thread.
    pub fn call(&self, arguments: &str, env: CallEnv, limits: &Limits) -> Outcome {
        let tool = self.name.to_string();
        let started = std::time::Instant::now();
        let opens = crate::store::opens();
        // A built-in let go since start-up is linked again here (its first call).
        let pre = match self.pre.get() {
            Ok(pre) => pre,
            Err(reason) => return Outcome::Failed(Failure::Setup { tool, reason }),
        };
        let mut store = match new_store(&self.engine, self.name.clone(), env, limits) {
            Ok(store) => store,
            Err(reason) => return Outcome::Failed(Failure::Setup { tool, reason }),
        };
        let result = pre.instantiate(&mut store).and_then(|t: Tool| {
            store.data_mut().stages.add(Stage::Instantiate, started);
            t.call_call(&mut store, arguments)
        });
        let stages = &mut store.data_mut().stages;
        stages.total = started.elapsed();
        stages.store_opens = crate::store::opens() - opens;
        tracing::debug!(tool = %tool, "time by stage: {}", stages.summary());
        if let Some(sink) = &store.data().env.timings {
            *sink.lock().unwrap_or_else(|p| p.into_inner()) = store.data().stages.clone();
        }
        let stderr = store.data().stderr.text();
        for line in stderr.lines().filter(|l| !l.trim().is_empty()) {
            tracing::debug!(tool = %tool, "stderr: {line}");
        }
        let guard = &store.data().guard;
        let max = limits.max_output_bytes;
        let too_large = |size: usize| Failure::OutputTooLarge {
            tool: tool.clone(),
            size_mib: size as f64 / (1 << 20) as f64,
            limit_mib: max >> 20,
        };
        match result {
            Ok(Ok(json)) if json.len() > max => Outcome::Failed(too_large(json.len())),
            Ok(Ok(json)) => Outcome::Ok(json),
            Ok(Err(CallError::InvalidArguments(body) | CallError::Failed(body))) if body.len() > max => {
                Outcome::Failed(too_large(body.len()))
            }
            Ok(Err(CallError::InvalidArguments(body))) => Outcome::ToolError { invalid_arguments: true, body },
            Ok(Err(CallError::Failed(body))) => Outcome::ToolError { invalid_arguments: false, body },
            Err(trap) => Outcome::Failed(match (guard.interrupted, guard.memory_denied) {
                (Some(Interrupt::Deadline), _) => {
                    Failure::Timeout { tool, elapsed: started.elapsed(), limit: limits.timeout }
                }
                (Some(Interrupt::Cancelled), _) => Failure::Cancelled { tool },
                (None, Some(asked)) => {
                    Failure::OutOfMemory { tool, asked_mib: asked >> 20, limit_mib: limits.memory_bytes >> 20 }
                }
                (None, None) => Failure::Crashed { tool, reason: crash_reason(&trap, &stderr) },
            }),
        }
    }
}

/// "wasm trap: …", plus what the guest said last: a Python traceback (whose
/// runtime then panics with a message that names no cause), a Rust panic
/// message, a JavaScript error and its stack, else the last lines of stderr.
fn crash_reason(trap: &wasmtime::Error, stderr: &str) -> String {
    let trap_text = match trap.downcast_ref::<wasmtime::Trap>() {
        Some(t) => t.to_string(),
        None => trap.to_string(),
    };
    let lines = stderr.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with("note:")).collect::<Vec<_>>();
    let panic = lines.iter().rposition(|l| l.contains("panicked at"));
    let traceback = lines.iter().rposition(|l| l.starts_with("Traceback (most recent call last)"));
    match (traceback, panic) {
        (Some(t), p) => {
            let end = p.filter(|&p| p > t).unwrap_or(lines.len());
            format!("{trap_text}; {}", capped(&lines[t..end], MAX_TRACEBACK_LINES))
        }
        // Rust prints "thread '…' panicked at file:line:col:" then the message.
        (None, Some(p)) => format!("{trap_text}; {}", lines[p..].iter().take(2).copied().collect::<Vec<_>>().join(" ")),
        (None, None) if lines.is_empty() => trap_text,
        // A JavaScript runtime (StarlingMonkey) prints the error, then "Stack:" and its frames.
        (None, None) => match lines.iter().rposition(|l| *l == "Stack:") {
            Some(s) if s > 0 => format!("{trap_text}; {}", capped(&lines[s - 1..], MAX_TRACEBACK_LINES)),
            _ => format!("{trap_text}; the tool's stderr ended: {}", capped(&lines, 3)),
        },
    }
}

/// Lines of a traceback shown at most: its end, which names the exception.
const MAX_TRACEBACK_LINES: usize = 12;

/// The last `n` of `lines`, joined with ` | `, at most 2,000 characters
/// (the end kept: it carries the exception).
fn capped(lines: &[&str], n: usize) -> String {
    const MAX_CHARS: usize = 2000;
    let joined = lines[lines.len().saturating_sub(n)..].join(" | ");
    let chars: Vec<char> = joined.chars().collect();
    if chars.len() > MAX_CHARS {
        format!("…{}", chars[chars.len() - MAX_CHARS..].iter().collect::<String>())
    } else {
        joined
    }
}

/// The fix for a component that imports the network, which no tool is
/// given; `None` when it imports none.
fn network_import(imports: &[String]) -> Option<String> {
    let net = imports.iter().find(|name| name.starts_with("wasi:http/") || name.starts_with("wasi:sockets/"))?;
    Some(format!(
        "it imports {net}, but ragbox tools get no network: rebuild it without HTTP or sockets \
         (JavaScript: `jco componentize … --disable http`; Python and Rust: drop the HTTP client)"
    ))
}

/// Argument problems named in one error at most.
const MAX_ARGUMENT_PROBLEMS: usize = 5;

/// A tool's input schema compiled for checking calls. Only what the schema
/// holds is used: a `$ref` to a file or a URL is refused, not fetched.
fn input_validator(schema: &str) -> Result<jsonschema::Validator, String> {
    let value: serde_json::Value =
        serde_json::from_str(schema).map_err(|e| format!("input schema is not JSON: {e}"))?;
    jsonschema::validator_for(&value).map_err(|e| format!("input schema is not a usable JSON Schema: {e}"))
}

/// Checks what `describe()` returned is usable as an MCP tool.
fn validate_info(info: &ToolInfo) -> Result<(), String> {
    let name_ok = !info.name.is_empty()
        && info.name.len() <= 64
        && info.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !name_ok {
        return Err(format!("tool name {:?} must be 1-64 letters, digits, '_' or '-'", info.name));
    }
    let object_schema = |what: &str, text: &str| -> Result<(), String> {
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("{what} is not JSON: {e}"))?;
        match value.get("type").and_then(|t| t.as_str()) {
            Some("object") => Ok(()),
            _ => Err(format!("{what} must be a JSON Schema with \"type\": \"object\"")),
        }
    };
    object_schema("input schema", &info.input_schema)?;
    if let Some(out) = &info.output_schema {
        object_schema("output schema", out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_network_import_is_named_with_the_fix() {
        let imports = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        let fix = network_import(&imports(&["wasi:io/streams@0.2.6", "wasi:http/outgoing-handler@0.2.6"])).unwrap();
        assert!(fix.contains("wasi:http/outgoing-handler@0.2.6") && fix.contains("--disable http"), "{fix}");
        assert!(network_import(&imports(&["wasi:sockets/tcp@0.2.0"])).is_some());
        assert_eq!(network_import(&imports(&["wasi:filesystem/types@0.2.6", "ragbox:tools/corpus@0.2.0"])), None);
    }

    #[test]
    fn input_schemas_are_compiled_from_what_they_hold() {
        let v =
            input_validator(r#"{"type":"object","properties":{"n":{"type":"integer"}},"additionalProperties":false}"#)
                .unwrap();
        assert!(v.is_valid(&serde_json::json!({"n": 1})));
        assert!(!v.is_valid(&serde_json::json!({"n": 1, "m": 2})));
        assert!(input_validator("{").unwrap_err().contains("not JSON"));
        // A reference out of the schema would be a network or file read: refused.
        for far in [r#"{"$ref":"https://example.com/s.json"}"#, r#"{"$ref":"file:///etc/passwd"}"#] {
            assert!(input_validator(far).is_err(), "{far}");
        }
    }

    #[test]
    fn crash_reason_prefers_the_panic_message() {
        let trap = wasmtime::Error::from(wasmtime::Trap::UnreachableCodeReached);
        let stderr = "\nthread '<unnamed>' panicked at src/lib.rs:10:5:\nboom\nnote: run with `RUST_BACKTRACE=1`\n";
        let r = crash_reason(&trap, stderr);
        assert!(r.starts_with("wasm trap: "), "{r}");
        assert!(r.contains("panicked at src/lib.rs:10:5: boom"), "{r}");
        assert_eq!(crash_reason(&trap, ""), wasmtime::Trap::UnreachableCodeReached.to_string());
    }

    #[test]
    fn crash_reason_carries_a_python_traceback() {
        let trap = wasmtime::Error::from(wasmtime::Trap::UnreachableCodeReached);
        // As componentize-py's runtime reports an uncaught exception.
        let stderr = "starting\nTraceback (most recent call last):\n  File \"/0/app.py\", line 44, in call\n\
                      ZeroDivisionError: division by zero\nthread '<unnamed>' (1) panicked at runtime/src/lib.rs:1293:29:\n\
                      Python function threw an unexpected exception\nnote: run with `RUST_BACKTRACE=1`\n";
        let r = crash_reason(&trap, stderr);
        let want = "; Traceback (most recent call last): | File \"/0/app.py\", line 44, in call | \
                    ZeroDivisionError: division by zero";
        assert!(r.ends_with(want), "{r}");
        // As componentize-js reports an exception that is not the tool's error.
        let js = "invalid variant tag value `undefined` (received `TypeError: x is null`) specified for `CallError`\n\
                  Stack:\n  export_call@/tmp/s/initializer.js:3616:17\nRedirecting call to abort() to mozalloc_abort\n";
        let r = crash_reason(&trap, js);
        assert!(r.contains("; invalid variant tag value `undefined` (received `TypeError: x is null`)"), "{r}");
        let r = crash_reason(&trap, "a\nb\nc\nd\n");
        assert!(r.ends_with("; the tool's stderr ended: b | c | d"), "{r}");
        let long = format!("{}END\n", "x".repeat(5000));
        assert!(crash_reason(&trap, &long).ends_with("xxEND") && crash_reason(&trap, &long).len() < 2200);
    }
}
