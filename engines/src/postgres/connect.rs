//! Reaching the server: the URL as configured, the password from where the
//! user keeps it (never the URL), TLS when the URL asks for it, a few
//! connections reused between operations, and a lost connection retried with
//! backoff before an operation gives up with an error that says what to do.

use crate::records::StoreError;
use postgres::config::{Host, SslMode};
use postgres::{Client, NoTls};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long an operation keeps trying to (re)connect before it fails.
const RETRY_FOR: Duration = Duration::from_secs(10);
/// Connections kept open between operations (more are opened while busy).
const IDLE_KEPT: usize = 4;

/// Where the shared store is and how to log in; the password is never kept
/// in a printable field.
#[derive(Clone)]
pub struct Target {
    config: postgres::Config,
    /// `user@host:port/db`, for messages and logs.
    shown: String,
    ca_file: Option<PathBuf>,
    tls: Tls,
}

/// How the connection is protected, from libpq's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tls {
    /// `disable`, `allow`, `prefer` (the default): not encrypted.
    Off,
    /// `verify-ca`: encrypted, the certificate chain checked against the
    /// trusted roots, the host name not.
    Chain,
    /// `require`, `verify-full`: encrypted, chain and host name checked
    /// (stricter than libpq's `require`, which checks neither).
    Full,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

/// How the user configured the server (command line or their own config file).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TargetSpec {
    /// `postgres://user@host:port/db?sslmode=require`, without a password.
    pub url: String,
    /// An environment variable holding the password (else `PGPASSWORD`, else `~/.pgpass`).
    pub password_env: Option<String>,
    /// Extra CA certificates (PEM) to trust for TLS, besides the public roots.
    pub ca_file: Option<PathBuf>,
}

impl Target {
    /// Parses `spec` and finds the password; refuses a password in the URL
    /// (it would sit in argv, a shell history or a config file in plain sight).
    pub fn new(spec: &TargetSpec) -> Result<Self, StoreError> {
        let refused = |message: String| StoreError::Setup { server: redacted(&spec.url), message };
        let (url, tls) = take_sslmode(&spec.url).map_err(refused)?;
        let mut config = postgres::Config::from_str(&url).map_err(|e| {
            refused(format!("the store URL does not parse ({e}); write it as postgres://USER@HOST:PORT/DATABASE"))
        })?;
        config.ssl_mode(if tls == Tls::Off { SslMode::Disable } else { SslMode::Require });
        if config.get_password().is_some() {
            return Err(refused(
                "the store URL holds a password; remove it and put the password in PGPASSWORD, \
                 in ~/.pgpass, or in an environment variable named by `password_env` under [store]"
                    .into(),
            ));
        }
        if config.get_user().is_none() {
            let user = std::env::var("USER").or_else(|_| std::env::var("LOGNAME")).map_err(|_| {
                refused("the store URL names no user and $USER is unset; write postgres://USER@HOST/DB".into())
            })?;
            config.user(&user);
        }
        if config.get_hosts().is_empty() {
            config.host("localhost");
        }
        config.application_name("ragbox");
        config.connect_timeout(Duration::from_secs(5));
        let shown = show(&config);
        if let Some(password) = find_password(&config, spec.password_env.as_deref()) {
            config.password(password);
        }
        Ok(Self { config, shown, ca_file: spec.ca_file.clone(), tls })
    }

    /// `user@host:port/db`: what messages name (no password, ever).
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// Whether the connection is encrypted.
    pub fn tls(&self) -> bool {
        self.tls != Tls::Off
    }

    /// Whether every host is this machine (an unencrypted connection then stays on it).
    pub fn local(&self) -> bool {
        self.config.get_hosts().iter().all(|h| match h {
            Host::Tcp(name) => matches!(name.as_str(), "localhost" | "127.0.0.1" | "::1"),
            #[cfg(unix)]
            Host::Unix(_) => true,
        })
    }

    /// One new connection.
    fn connect(&self) -> Result<Client, StoreError> {
        let result = if self.tls() {
            let tls = tokio_postgres_rustls::MakeRustlsConnect::new(self.tls_config()?);
            self.config.connect(tls)
        } else {
            self.config.connect(NoTls)
        };
        result.map_err(|e| self.classify(e))
    }

    /// The public roots plus the configured CA file.
    fn tls_config(&self) -> Result<rustls::ClientConfig, StoreError> {
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject;
        let mut roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
        if let Some(file) = &self.ca_file {
            let bad = |e: String| StoreError::Setup {
                server: self.shown.clone(),
                message: format!("cannot read the CA file {}: {e}", file.display()),
            };
            for cert in CertificateDer::pem_file_iter(file).map_err(|e| bad(e.to_string()))? {
                roots.add(cert.map_err(|e| bad(e.to_string()))?).map_err(|e| bad(e.to_string()))?;
            }
        }
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let setup = |message: String| StoreError::Setup { server: self.shown.clone(), message };
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| setup(e.to_string()))?;
        if self.tls == Tls::Chain {
            let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(roots.into(), provider)
                .build()
                .map_err(|e| setup(e.to_string()))?;
            let chain_only = std::sync::Arc::new(ChainOnly(verifier));
            return Ok(builder.dangerous().with_custom_certificate_verifier(chain_only).with_no_client_auth());
        }
        Ok(builder.with_root_certificates(roots).with_no_client_auth())
    }

    /// Sorts a driver error into what the user can act on.
    pub(super) fn classify(&self, e: postgres::Error) -> StoreError {
        let server = self.shown.clone();
        if let Some(db) = e.as_db_error() {
            let code = db.code().code();
            let message = db.message().to_string();
            return match code {
                // invalid_password, invalid_authorization_specification
                "28P01" | "28000" => StoreError::Setup {
                    server,
                    message: format!(
                        "{message}; set the password in PGPASSWORD, ~/.pgpass or the variable \
                         named by `password_env` under [store]"
                    ),
                },
                // invalid_catalog_name: the database does not exist
                "3D000" => {
                    StoreError::Setup { server, message: format!("{message}; create it (createdb) or fix the URL") }
                }
                // admin_shutdown, crash_shutdown, cannot_connect_now, too_many_connections
                "57P01" | "57P02" | "57P03" | "53300" => StoreError::Unreachable { server, message },
                // deadlock_detected, serialization_failure: the transaction was
                // rolled back and may simply run again
                "40P01" | "40001" => StoreError::Conflict { server, message },
                // read_only_sql_transaction: a standby
                "25006" => StoreError::Setup {
                    server,
                    message: format!("{message}: this server is a read-only replica; index against the primary"),
                },
                _ => StoreError::Database { server, message: format!("{message} (SQLSTATE {code})") },
            };
        }
        let message = chain(&e);
        if let Some(tls) = tls_error(&e) {
            // Retrying cannot help a certificate that does not verify.
            return StoreError::Setup {
                server,
                message: format!(
                    "the TLS handshake failed: {tls}; if the server's certificate comes from your own CA \
                     (or your provider's), name its PEM file in `ca_file` under [store]"
                ),
            };
        }
        if e.is_closed() || is_io(&e) {
            return StoreError::Unreachable { server, message };
        }
        StoreError::Database { server, message }
    }
}

/// `sslmode=verify-ca`: the certificate must chain to a trusted root; the
/// name it was issued for is not compared with the host's.
#[derive(Debug)]
struct ChainOnly(std::sync::Arc<rustls::client::WebPkiServerVerifier>);

impl rustls::client::danger::ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &rustls::pki_types::CertificateDer<'_>,
        intermediates: &[rustls::pki_types::CertificateDer<'_>],
        server_name: &rustls::pki_types::ServerName<'_>,
        ocsp: &[u8],
        now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        use rustls::{CertificateError, Error};
        match self.0.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Err(Error::InvalidCertificate(CertificateError::NotValidForName))
            | Err(Error::InvalidCertificate(CertificateError::NotValidForNameContext { .. })) => {
                Ok(rustls::client::danger::ServerCertVerified::assertion())
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `url` without its `sslmode`, and the protection that mode asks for.
/// libpq's modes are all understood (the driver knows only three).
fn take_sslmode(url: &str) -> Result<(String, Tls), String> {
    let mut mode = None;
    let rest = if let Some((base, query)) = url.split_once('?').filter(|_| url.contains("://")) {
        let mut kept = Vec::new();
        for pair in query.split('&') {
            match pair.split_once('=') {
                Some(("sslmode", value)) => mode = Some(value.to_string()),
                _ => kept.push(pair),
            }
        }
        if kept.is_empty() { base.to_string() } else { format!("{base}?{}", kept.join("&")) }
    } else if !url.contains("://") {
        let mut kept = Vec::new();
        for word in url.split_whitespace() {
            match word.split_once('=') {
                Some(("sslmode", value)) => mode = Some(value.trim_matches('\'').to_string()),
                _ => kept.push(word),
            }
        }
        kept.join(" ")
    } else {
        url.to_string()
    };
    let tls = match mode.as_deref() {
        None | Some("disable" | "allow" | "prefer") => Tls::Off,
        Some("require" | "verify-full") => Tls::Full,
        Some("verify-ca") => Tls::Chain,
        Some(other) => {
            return Err(format!(
                "sslmode={other} is not one of disable, allow, prefer, require, verify-ca, verify-full"
            ));
        }
    };
    Ok((rest, tls))
}

/// Connections reused between operations, each operation on one of them.
pub struct Pool {
    target: Target,
    idle: Mutex<Vec<Client>>,
}

impl Pool {
    /// A pool connecting to `target` on first use.
    pub fn new(target: Target) -> Self {
        Self { target, idle: Mutex::new(Vec::new()) }
    }

    /// The server.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// Runs `op` on a connection. While the server cannot be reached (a
    /// restart, a failover, a dropped network), or rolls `op` back to break a
    /// deadlock, it reconnects as needed and runs `op` again with backoff; so
    /// `op` must be safe to repeat (each is one transaction that either
    /// committed whole or not at all, and repeating a committed one changes
    /// nothing).
    pub fn run<T>(&self, mut op: impl FnMut(&mut Client) -> Result<T, StoreError>) -> Result<T, StoreError> {
        let started = Instant::now();
        let mut pause = Duration::from_millis(50);
        loop {
            let attempt = self.take().and_then(|mut client| {
                let result = op(&mut client);
                if !client.is_closed() {
                    self.give_back(client);
                }
                result
            });
            match attempt {
                Err(StoreError::Unreachable { server, message }) => {
                    if started.elapsed() + pause > RETRY_FOR {
                        return Err(StoreError::Unreachable { server, message });
                    }
                    tracing::warn!(server = %server, "shared store unreachable ({message}); retrying");
                    // Every kept connection went the same way.
                    self.idle.lock().unwrap_or_else(|p| p.into_inner()).clear();
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_secs(2));
                }
                // Rolled back by the server (a deadlock, a serialization failure): run again.
                Err(StoreError::Conflict { server, message }) => {
                    if started.elapsed() + pause > RETRY_FOR {
                        return Err(StoreError::Conflict { server, message });
                    }
                    tracing::info!(server = %server, "shared store transaction rolled back ({message}); retrying");
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_secs(2));
                }
                other => return other,
            }
        }
    }

    fn take(&self) -> Result<Client, StoreError> {
        let kept = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        match kept {
            Some(client) if !client.is_closed() => Ok(client),
            _ => self.target.connect(),
        }
    }

    fn give_back(&self, client: Client) {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < IDLE_KEPT {
            idle.push(client);
        }
    }
}

/// The driver's message with every cause after it (its own names only the kind).
fn chain(e: &postgres::Error) -> String {
    let mut message = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    message
}

/// The rustls error behind a failed handshake (tokio-rustls wraps it in an io::Error).
fn tls_error(e: &postgres::Error) -> Option<&rustls::Error> {
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(tls) = s.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        if let Some(tls) = s.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref()?.downcast_ref()) {
            return Some(tls);
        }
        source = s.source();
    }
    None
}

fn is_io(e: &postgres::Error) -> bool {
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if s.is::<std::io::Error>() {
            return true;
        }
        source = s.source();
    }
    false
}

/// `user@host:port/db` of a parsed config.
fn show(config: &postgres::Config) -> String {
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(name)) => name.clone(),
        #[cfg(unix)]
        Some(Host::Unix(path)) => path.display().to_string(),
        None => "localhost".into(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config.get_user().unwrap_or("?");
    let db = config.get_dbname().unwrap_or(user);
    format!("{user}@{host}:{port}/{db}")
}

/// A store URL that may not parse, shown with nothing that could be a
/// password: no user info, no query (`?password=` is libpq's too), and in
/// the `key=value` form only the host, port, database and user.
fn redacted(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://") {
        let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
        return match rest.split_once('?') {
            Some((place, _)) => format!("{scheme}://{place}?…"),
            None => format!("{scheme}://{rest}"),
        };
    }
    let shown: Vec<&str> = url
        .split_whitespace()
        .filter(|word| {
            word.split_once('=').is_some_and(|(k, _)| matches!(k, "host" | "hostaddr" | "port" | "dbname" | "user"))
        })
        .collect();
    if shown.is_empty() { "the store URL".to_string() } else { shown.join(" ") }
}

/// The password from the variable `password_env`, else `PGPASSWORD`, else
/// the first matching line of `~/.pgpass` (or `$PGPASSFILE`).
fn find_password(config: &postgres::Config, password_env: Option<&str>) -> Option<String> {
    if let Some(var) = password_env {
        return std::env::var(var).ok();
    }
    if let Ok(password) = std::env::var("PGPASSWORD") {
        return Some(password);
    }
    let file = match std::env::var_os("PGPASSFILE") {
        Some(file) => PathBuf::from(file),
        None => PathBuf::from(std::env::var_os("HOME")?).join(".pgpass"),
    };
    let (host, port) = match config.get_hosts().first() {
        Some(Host::Tcp(name)) => (name.clone(), config.get_ports().first().copied().unwrap_or(5432)),
        _ => ("localhost".to_string(), config.get_ports().first().copied().unwrap_or(5432)),
    };
    let user = config.get_user()?;
    pgpass_lookup(&file, &host, port, config.get_dbname().unwrap_or(user), user)
}

/// The password of the first line of the pgpass `file` matching
/// host:port:database:user (`*` matches anything; `\:` and `\\` escape).
/// Like libpq, a file others can read is ignored.
fn pgpass_lookup(file: &Path, host: &str, port: u16, db: &str, user: &str) -> Option<String> {
    let meta = std::fs::metadata(file).ok()?;
    if crate::platform::mode_open_to_others(&meta).is_some() {
        tracing::warn!("{} is readable by others; its passwords are ignored (chmod 600 it)", file.display());
        return None;
    }
    let text = std::fs::read_to_string(file).ok()?;
    let port = port.to_string();
    text.lines().filter(|l| !l.starts_with('#')).find_map(|line| {
        let fields = split_pgpass(line);
        let [h, p, d, u, password] = <[String; 5]>::try_from(fields).ok()?;
        let fits = |pattern: &str, value: &str| pattern == "*" || pattern == value;
        (fits(&h, host) && fits(&p, &port) && fits(&d, db) && fits(&u, user)).then_some(password)
    })
}

fn split_pgpass(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => fields.last_mut().expect("one field").extend(chars.next()),
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => fields.last_mut().expect("one field").push(c),
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_in_the_url_is_refused_and_never_shown() {
        let spec = TargetSpec { url: "postgres://ana:s3cret@db.example:5433/notes".into(), ..Default::default() };
        let message = Target::new(&spec).expect_err("refused").to_string();
        assert!(!message.contains("s3cret"), "{message}");
        assert!(message.contains("PGPASSWORD"), "{message}");
        let spec = TargetSpec { url: "postgres://ana@db.example:5433/notes".into(), ..Default::default() };
        let target = Target::new(&spec).expect("parses");
        assert_eq!(target.shown(), "ana@db.example:5433/notes");
        assert!(!target.tls() && !target.local());
    }

    #[test]
    fn a_password_is_never_echoed_from_a_url_that_does_not_parse() {
        for url in [
            "postgres://ana:s3cret@db.example:5433/notes?sslmode=bogus",
            "postgres://db.example/notes?password=s3cret&sslmode=bogus",
            "postgres://db.example/notes?sslmode=bogus&password=s3cret",
            "host=db.example password=s3cret sslmode=bogus",
            "host=db.example password='s3 cret' port=nope",
            "postgresql://ana:s3cret@/notes?host=/tmp&port=x",
        ] {
            let message =
                Target::new(&TargetSpec { url: url.into(), ..Default::default() }).expect_err("refused").to_string();
            assert!(!message.contains("s3") && !message.contains("cret"), "{url}: {message}");
        }
    }

    #[test]
    fn every_libpq_sslmode_is_understood() {
        for (mode, tls) in [
            ("disable", false),
            ("allow", false),
            ("prefer", false),
            ("require", true),
            ("verify-ca", true),
            ("verify-full", true),
        ] {
            for url in [
                format!("postgres://ana@db.example/notes?sslmode={mode}"),
                format!("host=db.example user=ana sslmode={mode}"),
            ] {
                let target = Target::new(&TargetSpec { url: url.clone(), ..Default::default() })
                    .unwrap_or_else(|e| panic!("{url}: {e}"));
                assert_eq!(target.tls(), tls, "{url}");
            }
        }
        let target = Target::new(&TargetSpec {
            url: "postgres://ana@db.example/notes?sslmode=verify-ca&connect_timeout=3".into(),
            ..Default::default()
        })
        .unwrap();
        assert!(target.tls_config().is_ok(), "a verify-ca client config builds");
    }

    #[cfg(unix)]
    #[test]
    fn pgpass_lines_match_with_wildcards_and_escapes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("pgpass");
        std::fs::write(&file, "# comment\nother:5432:*:ana:no\ndb:*:notes:ana:pa\\:ss\n*:*:*:*:fallback\n")
            .expect("write");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        assert_eq!(pgpass_lookup(&file, "db", 5433, "notes", "ana").as_deref(), Some("pa:ss"));
        assert_eq!(pgpass_lookup(&file, "x", 1, "y", "z").as_deref(), Some("fallback"));
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        assert_eq!(pgpass_lookup(&file, "db", 5433, "notes", "ana"), None);
    }
}
