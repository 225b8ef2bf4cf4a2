//! `serve --http`: the MCP Streamable HTTP transport, so several agents share
//! one warm server and index. Every request needs the bearer token; `Host`
//! and `Origin` are checked against DNS rebinding; loopback unless asked.
//! A flood is bounded: at most [`MAX_SESSIONS`] sessions, each closed after
//! [`SESSION_IDLE`] without traffic, or [`SESSION_INIT`] after its
//! `initialize` when nothing follows it; at most [`MAX_CONNECTIONS`]
//! connections, and one that does not send its headers within
//! [`HEADER_TIMEOUT`] is closed.

use super::server::RagboxServer;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::transport::common::server_side_http::SessionId;
use rmcp::transport::streamable_http_server::session::SessionManager as _;
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, SessionConfig};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Where the MCP endpoint is served.
pub const ENDPOINT: &str = "/mcp";

/// Sessions open at once; an `initialize` beyond them gets 503.
pub const MAX_SESSIONS: usize = 64;
/// A session with no traffic for this long is closed.
pub const SESSION_IDLE: Duration = Duration::from_secs(300);
/// A session that is not initialized within this long is closed, and so is
/// one whose client sends nothing after `initialize` for this long (a real
/// client sends `notifications/initialized` at once).
pub const SESSION_INIT: Duration = Duration::from_secs(10);
/// Connections open at once; more wait to be accepted.
pub const MAX_CONNECTIONS: usize = 256;
/// A connection that does not send a request's headers within this long is closed.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the HTTP server cannot start.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// A public address without `--allow-public`.
    #[error(
        "refusing to serve on {0}: it is not a loopback address, so other machines could reach the tools. \
         Use 127.0.0.1, or pass --allow-public to serve there anyway (the bearer token is still required)"
    )]
    Public(SocketAddr),
    /// The token file could not be read or written.
    #[error("token file {path}: {source}")]
    Token { path: PathBuf, source: std::io::Error },
    /// The token file holds no token.
    #[error("token file {0} is empty: put a token in it, or delete it to have one generated")]
    EmptyToken(PathBuf),
    /// The token is too short, or others can read it.
    #[error("token file {path} is refused: {why}. Delete it to have a fresh token generated")]
    WeakToken {
        /// The token file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: SocketAddr, source: std::io::Error },
}

/// How to serve over HTTP.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Where to listen.
    pub addr: SocketAddr,
    /// Serve on a non-loopback address.
    pub allow_public: bool,
    /// Host names clients may use besides the loopback ones (a public deployment's name).
    pub allowed_hosts: Vec<String>,
}

/// The shortest token accepted (a fresh one is 64 hex digits).
const MIN_TOKEN_CHARS: usize = 32;
/// The most of a token file read.
const MAX_TOKEN_FILE_BYTES: u64 = 4096;

/// The token file's name in the user's config dir (the default).
pub const TOKEN_FILE: &str = "http-token";

/// The token in `path`, or a fresh one written there (readable by the owner
/// only); true when it was just made and should be shown once.
pub fn load_or_create_token(path: &Path) -> Result<(String, bool), HttpError> {
    let err = |source| HttpError::Token { path: path.to_path_buf(), source };
    match read_token_file(path) {
        Ok(text) => {
            let token = text.trim().to_string();
            if token.is_empty() {
                return Err(HttpError::EmptyToken(path.to_path_buf()));
            }
            if token.len() < MIN_TOKEN_CHARS {
                return Err(HttpError::WeakToken {
                    path: path.to_path_buf(),
                    why: format!("it is {} characters, fewer than {MIN_TOKEN_CHARS}", token.len()),
                });
            }
            if let Some(mode) = crate::platform::mode_open_to_others(&std::fs::metadata(path).map_err(err)?) {
                let why = format!("other users can read it (mode {mode:o}); run `chmod 600 {}`", path.display());
                return Err(HttpError::WeakToken { path: path.to_path_buf(), why });
            }
            Ok((token, false))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let token = new_token().map_err(err)?;
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(err)?;
            }
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            crate::platform::private_std_file(&mut options);
            let mut file = options.open(path).map_err(err)?;
            writeln!(file, "{token}").map_err(err)?;
            Ok((token, true))
        }
        Err(e) => Err(err(e)),
    }
}

/// A token file's text: a regular file (not a FIFO or a device a link might
/// lead to), read up to its cap.
fn read_token_file(path: &Path) -> std::io::Result<String> {
    use std::io::Read as _;
    if !std::fs::metadata(path)?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let file = std::fs::File::open(path)?;
    let mut text = String::new();
    file.take(MAX_TOKEN_FILE_BYTES).read_to_string(&mut text)?;
    Ok(text)
}

/// 32 random bytes from the OS, hex.
fn new_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(std::io::Error::other)?;
    Ok(hex::encode(bytes))
}

/// Serves MCP over Streamable HTTP until `stop` fires or ctrl-c.
pub async fn serve_http(
    server: RagboxServer,
    options: HttpOptions,
    token: String,
    stop: CancellationToken,
) -> Result<(), HttpError> {
    let addr = options.addr;
    if !addr.ip().is_loopback() && !options.allow_public {
        return Err(HttpError::Public(addr));
    }
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|source| HttpError::Bind { addr, source })?;
    let bound = listener.local_addr().map_err(|source| HttpError::Bind { addr, source })?;
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(allowed_hosts(&options, bound))
        .with_allowed_origins(allowed_origins(bound))
        .enforce_origin_validation()
        .with_cancellation_token(stop.child_token());
    let mut sessions = LocalSessionManager::default();
    let mut session = SessionConfig::default();
    session.keep_alive = Some(SESSION_IDLE);
    session.init_timeout = Some(SESSION_INIT);
    sessions.session_config = session;
    let sessions = Arc::new(sessions);
    let service = StreamableHttpService::new(move || Ok(server.clone()), sessions.clone(), config);
    let limits = Sessions { manager: sessions, fresh: Arc::default() };
    let router = axum::Router::new()
        .nest_service(ENDPOINT, service)
        .layer(middleware::from_fn_with_state(limits, limit_sessions))
        .layer(middleware::from_fn_with_state(Arc::<str>::from(token), require_token));
    // Tests and scripts read this line to learn the port when they asked for port 0.
    tracing::info!("serving MCP over HTTP on http://{bound}{ENDPOINT}");
    accept(listener, router, stop).await;
    Ok(())
}

/// Serves connections from `listener` until `stop` fires or ctrl-c: at most
/// [`MAX_CONNECTIONS`] at once, each closed when its headers are slow.
async fn accept(listener: tokio::net::TcpListener, router: axum::Router, stop: CancellationToken) {
    use hyper_util::rt::{TokioIo, TokioTimer};
    let on_ctrl_c = stop.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_ctrl_c.cancel();
        }
    });
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    while let Some(Ok(permit)) = stop.run_until_cancelled(slots.clone().acquire_owned()).await {
        let stream = match stop.run_until_cancelled(listener.accept()).await {
            None => return,
            Some(Ok((stream, _))) => stream,
            Some(Err(e)) => {
                // Out of file descriptors and the like: wait, then go on.
                tracing::warn!("cannot accept a connection: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let service = hyper_util::service::TowerToHyperService::new(router.clone());
        let stop = stop.clone();
        tokio::spawn(async move {
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                served = connection => {
                    if let Err(e) = served {
                        tracing::debug!("HTTP connection ended: {e}");
                    }
                }
                () = stop.cancelled() => {}
            }
            drop(permit);
        });
    }
}

/// The sessions, and those that have sent nothing since their `initialize`.
#[derive(Clone)]
struct Sessions {
    manager: Arc<LocalSessionManager>,
    fresh: Arc<std::sync::Mutex<std::collections::HashSet<String>>>,
}

/// The session id a request or response carries.
const SESSION_HEADER: &str = "mcp-session-id";

/// Answers 503 to a new session's `initialize` while [`MAX_SESSIONS`] are
/// open, and closes a new session that sends nothing within [`SESSION_INIT`]
/// (without this, one `initialize` would hold a slot for [`SESSION_IDLE`]).
async fn limit_sessions(State(sessions): State<Sessions>, request: Request, next: Next) -> Response {
    let fresh = |s: &Sessions| s.fresh.lock().unwrap_or_else(|p| p.into_inner()).len();
    if let Some(id) = request.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()) {
        sessions.fresh.lock().unwrap_or_else(|p| p.into_inner()).remove(id);
        return next.run(request).await;
    }
    let new_session = request.method() == axum::http::Method::POST;
    if new_session && sessions.manager.sessions.read().await.len() >= MAX_SESSIONS {
        let mut response = (
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "this server already has {MAX_SESSIONS} sessions open; close one (DELETE with its Mcp-Session-Id) \
                 or wait: idle sessions close after {} s\n",
                SESSION_IDLE.as_secs()
            ),
        )
            .into_response();
        response.headers_mut().insert(header::RETRY_AFTER, header::HeaderValue::from_static("10"));
        return response;
    }
    let response = next.run(request).await;
    let made = response.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_string);
    if let Some(id) = made {
        sessions.fresh.lock().unwrap_or_else(|p| p.into_inner()).insert(id.clone());
        tracing::debug!(fresh = fresh(&sessions), "new HTTP session");
        tokio::spawn(async move {
            tokio::time::sleep(SESSION_INIT).await;
            let silent = sessions.fresh.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
            if silent {
                tracing::debug!("closing HTTP session {id}: nothing came after its initialize");
                let _ = sessions.manager.close_session(&SessionId::from(id.as_str())).await;
            }
        });
    }
    response
}

/// Hosts a browser may name to reach this server: loopback names with the
/// bound port, plus the bound address and the user's names when public.
fn allowed_hosts(options: &HttpOptions, bound: SocketAddr) -> Vec<String> {
    let port = bound.port();
    let mut hosts = vec![
        "localhost".to_string(),
        format!("localhost:{port}"),
        "127.0.0.1".to_string(),
        format!("127.0.0.1:{port}"),
        "::1".to_string(),
        format!("[::1]:{port}"),
    ];
    if options.allow_public {
        hosts.push(bound.ip().to_string());
        hosts.push(bound.to_string());
    }
    hosts.extend(options.allowed_hosts.iter().cloned());
    hosts
}

/// Origins a browser page may call from: only pages served on this machine's loopback.
fn allowed_origins(bound: SocketAddr) -> Vec<String> {
    let port = bound.port();
    ["localhost", "127.0.0.1", "[::1]"].iter().map(|h| format!("http://{h}:{port}")).collect()
}

/// Answers 401 unless the request carries `Authorization: Bearer <token>`.
async fn require_token(State(token): State<Arc<str>>, request: Request, next: Next) -> Response {
    if bearer(request.headers()).is_some_and(|given| same(given.as_bytes(), token.as_bytes())) {
        return next.run(request).await;
    }
    let mut response = (
        StatusCode::UNAUTHORIZED,
        "missing or wrong bearer token: send `Authorization: Bearer <token>` with the token from the \
         server's token file (printed when it was made)\n",
    )
        .into_response();
    response.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
    response
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// Compares without stopping at the first difference, so timing tells nothing about the token.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens_are_read_and_compared() {
        let mut headers = HeaderMap::new();
        assert_eq!(bearer(&headers), None);
        headers.insert(header::AUTHORIZATION, "Bearer abc".parse().unwrap());
        assert_eq!(bearer(&headers), Some("abc"));
        headers.insert(header::AUTHORIZATION, "Basic abc".parse().unwrap());
        assert_eq!(bearer(&headers), None);
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"abcd"));
    }

    #[test]
    fn a_token_is_made_once_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/http-token");
        let (first, fresh) = load_or_create_token(&path).unwrap();
        assert!(fresh);
        assert_eq!(first.len(), 64);
        let (again, fresh) = load_or_create_token(&path).unwrap();
        assert!(!fresh);
        assert_eq!(first, again);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
        std::fs::write(&path, "\n").unwrap();
        assert!(matches!(load_or_create_token(&path), Err(HttpError::EmptyToken(_))));
        std::fs::write(&path, "x\n").unwrap();
        let short = load_or_create_token(&path).unwrap_err().to_string();
        assert!(short.contains("fewer than 32"), "{short}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::write(&path, format!("{first}\n")).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
            let open = load_or_create_token(&path).unwrap_err().to_string();
            assert!(open.contains("other users can read it") && open.contains("chmod 600"), "{open}");
        }
    }
}
