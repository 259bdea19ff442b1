//! The local AWS: MiniStack (the default; runs our compiled functions behind real
//! event source mappings and accepts our stacks) or moto's server (the second,
//! independent emulator the Rust suite also runs on). Each is pinned in
//! `tests/emulator/<name>.txt`, installed into its own virtual environment under
//! `.venv/`, and run on loopback only.
//!
//! MiniStack runs as AWS does, with IAM checked on every call and on TLS: `AUTH=true`
//! (each function runs with its execution role's session; every call is evaluated
//! against that role's policies) and HTTPS with a certificate made here for 127.0.0.1
//! (the stacks' TLS-only policies deny every plain-HTTP caller, as on AWS). It starts
//! through `tests/emulator/ministack_iam.py`, which corrects MiniStack's IAM mapping of
//! PartiQL calls to AWS's. The functions it runs, and every client given
//! [`Emulator::trust_exports`] (the Rust SDK, Terraform, the CDK, botocore), trust the
//! certificate; nothing is told to skip verification. `OUTBOX_EMULATOR_IAM=off` starts
//! it as before (no IAM, plain HTTP), for debugging only: the stacks' TLS-only queue
//! policies then refuse the deployments. moto checks no IAM and runs on plain HTTP.
//!
//! A state directory (`OUTBOX_EMULATOR_STATE`, default `.emulator/`) holds the pid,
//! endpoint, kind, log and certificate: the test run and the demo each use a fresh one,
//! so concurrent runs never stop each other's emulator.

use crate::process::{Cmd, alive, descendants, signal};
use crate::{Result, session::Session};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Which emulator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// MiniStack: Lambda functions, stacks, IAM on every call, TLS.
    Ministack,
    /// moto's server: the cross-check; no Lambda functions run.
    Moto,
}

impl Kind {
    /// Its name, as in `tests/emulator/<name>.txt` and `.venv/<name>`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Ministack => "ministack",
            Self::Moto => "moto",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        match name.trim() {
            "ministack" => Some(Self::Ministack),
            "moto" => Some(Self::Moto),
            _ => None,
        }
    }

    /// `OUTBOX_EMULATOR` when set, else MiniStack.
    pub fn from_env() -> Result<Self> {
        match std::env::var("OUTBOX_EMULATOR") {
            Ok(name) => Self::parse(&name).ok_or_else(|| {
                format!("OUTBOX_EMULATOR={name}: unknown emulator (ministack or moto)")
            }),
            Err(_) => Ok(Self::Ministack),
        }
    }

    fn health_path(self) -> &'static str {
        match self {
            Self::Ministack => "/_ministack/health",
            Self::Moto => "/moto-api/",
        }
    }
}

/// One emulator's state directory.
#[derive(Debug, Clone)]
pub struct Emulator {
    state: PathBuf,
}

impl Emulator {
    /// The emulator whose state lives in `state` (created if missing).
    pub fn at(state: impl Into<PathBuf>) -> Result<Self> {
        let state = state.into();
        std::fs::create_dir_all(&state)
            .map_err(|e| format!("cannot create {}: {e}", state.display()))?;
        Ok(Self { state })
    }

    /// `OUTBOX_EMULATOR_STATE`, else `.emulator/` in the repository.
    pub fn from_env(s: &Session) -> Result<Self> {
        Self::at(
            std::env::var_os("OUTBOX_EMULATOR_STATE")
                .map_or_else(|| s.path(".emulator"), PathBuf::from),
        )
    }

    /// Its state directory.
    pub fn state(&self) -> &Path {
        &self.state
    }

    /// Its log.
    pub fn log(&self) -> PathBuf {
        self.state.join("emulator.log")
    }

    fn file(&self, name: &str) -> Option<String> {
        std::fs::read_to_string(self.state.join(name))
            .ok()
            .map(|s| s.trim().to_owned())
    }

    fn pid(&self) -> Option<u32> {
        self.file("pid")?.parse().ok()
    }

    fn kind(&self) -> Option<Kind> {
        Kind::parse(&self.file("kind")?)
    }

    /// The endpoint of the one running, if one runs.
    pub fn endpoint(&self) -> Option<String> {
        self.pid().filter(|&p| alive(p))?;
        self.file("endpoint")
    }

    /// Installs (if needed) and starts `kind`, or finds it running; its endpoint.
    pub fn start(&self, s: &Session, kind: Kind) -> Result<String> {
        install(s, kind)?;
        if let Some(url) = self
            .endpoint()
            .filter(|url| self.kind() == Some(kind) && self.healthy(url, kind))
        {
            return Ok(url);
        }
        let port = match std::env::var("OUTBOX_EMULATOR_PORT") {
            Ok(port) => port,
            Err(_) => free_port()?.to_string(),
        };
        let venv = venv(s, kind);
        let mut url = format!("http://127.0.0.1:{port}");
        // Only loopback: nothing outside this machine can reach it.
        let cmd = match kind {
            Kind::Ministack => {
                // AWS_ENDPOINT_URL in its own environment: the functions it starts call
                // back to it. Its Lambda code cache and temporary files stay in the
                // state directory.
                let mut cmd = Cmd::new(venv.join("bin/python"))
                    .arg(s.path("tests/emulator/ministack_iam.py"))
                    .dir(&self.state)
                    .env("BIND_HOST", "127.0.0.1")
                    .env("GATEWAY_PORT", &port)
                    .env("MINISTACK_HOST", "127.0.0.1")
                    .env("TMPDIR", &self.state)
                    .env(
                        "LOG_LEVEL",
                        std::env::var("MINISTACK_LOG_LEVEL").unwrap_or_else(|_| "INFO".into()),
                    );
                if iam_enforced() {
                    let tls = self.tls_material()?;
                    url = format!("https://127.0.0.1:{port}");
                    // The functions inherit this environment: the endpoint and the CA bundle.
                    cmd = cmd
                        .env("AUTH", "true")
                        .env("USE_SSL", "1")
                        .env("MINISTACK_SSL_CERT", tls.join("server.crt"))
                        .env("MINISTACK_SSL_KEY", tls.join("server.key"))
                        .envs(&tls_env(&tls));
                } else {
                    let _ = std::fs::remove_dir_all(self.state.join("tls"));
                }
                cmd.env("AWS_ENDPOINT_URL", &url)
            }
            Kind::Moto => {
                Cmd::new(venv.join("bin/moto_server")).args(["-H", "127.0.0.1", "-p", &port])
            }
        };
        let pid = cmd.spawn_daemon(&self.log())?;
        self.write("pid", &pid.to_string())?;
        self.write("endpoint", &url)?;
        self.write("kind", kind.name())?;
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline && alive(pid) {
            if self.healthy(&url, kind) {
                return Ok(url);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let log = std::fs::read_to_string(self.log()).unwrap_or_default();
        Err(format!(
            "{} did not start; its log ({}):\n{log}",
            kind.name(),
            self.log().display()
        ))
    }

    /// Stops the one this state directory started, and its Lambda workers: TERM, then
    /// after 10 s KILL (MiniStack has been seen ignoring TERM, still serving minutes
    /// later with its workers).
    pub fn stop(&self) {
        if let Some(pid) = self.pid().filter(|&p| alive(p)) {
            let workers = descendants(pid);
            // Its CPU time and its live workers' (each has its own ended workers'):
            // a daemon's, which no wait of this run counts.
            let cpu: f64 = workers
                .iter()
                .chain([&pid])
                .filter_map(|p| crate::progress::process_cpu_seconds(&p.to_string()))
                .sum();
            eprintln!("emulator: pid {pid} used {cpu:.0} CPU-s");
            signal(&workers, "TERM");
            signal(&[pid], "TERM");
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline && alive(pid) {
                std::thread::sleep(Duration::from_millis(200));
            }
            if alive(pid) {
                eprintln!("emulator: pid {pid} ignored TERM for 10 s; killing it and its workers");
                signal(&descendants(pid), "KILL");
                signal(&[pid], "KILL");
            }
        }
        for name in ["pid", "endpoint", "kind"] {
            let _ = std::fs::remove_file(self.state.join(name));
        }
    }

    /// The variables a client needs to trust MiniStack's certificate (none for moto,
    /// nor when it runs without TLS).
    pub fn trust_exports(&self) -> Vec<(String, String)> {
        let tls = self.state.join("tls");
        if self.kind() != Some(Kind::Ministack) || !tls.join("ca-bundle.pem").is_file() {
            return Vec::new();
        }
        tls_env(&tls)
    }

    fn healthy(&self, url: &str, kind: Kind) -> bool {
        let cert = self.state.join("tls/server.crt");
        let mut curl = Cmd::new("curl").arg("-fsS");
        if cert.is_file() {
            curl = curl.arg("--cacert").arg(&cert);
        }
        curl.arg(format!("{url}{}", kind.health_path())).succeeds()
    }

    fn write(&self, name: &str, value: &str) -> Result {
        let path = self.state.join(name);
        std::fs::write(&path, format!("{value}\n"))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    }

    /// A self-signed server certificate for 127.0.0.1 and localhost (not a CA: rustls
    /// refuses a CA certificate served as the leaf), and a bundle of the system's roots
    /// plus it: the `*_CA_BUNDLE` and `SSL_CERT_FILE` variables replace a client's
    /// roots, and the same shell may also reach crates.io or npm.
    fn tls_material(&self) -> Result<PathBuf> {
        let dir = self.state.join("tls");
        if dir.join("server.crt").is_file() && dir.join("ca-bundle.pem").is_file() {
            return Ok(dir);
        }
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let made = Cmd::new("openssl")
            .args([
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "30", "-keyout",
            ])
            .arg(dir.join("server.key"))
            .arg("-out")
            .arg(dir.join("server.crt"))
            .args([
                "-subj",
                "/CN=outbox-local-aws",
                "-addext",
                "basicConstraints=critical,CA:FALSE",
            ])
            .args([
                "-addext",
                "keyUsage=critical,digitalSignature,keyEncipherment",
            ])
            .args([
                "-addext",
                "extendedKeyUsage=serverAuth",
                "-addext",
                "subjectAltName=IP:127.0.0.1,DNS:localhost",
            ])
            .succeeds();
        if !made {
            return Err(
                "openssl could not make the local AWS's certificate (is openssl installed?)".into(),
            );
        }
        let roots = Cmd::new("python3")
            .args(["-c", "import ssl; p = ssl.get_default_verify_paths(); print(p.cafile or p.openssl_cafile)"])
            .read()?;
        let mut bundle = std::fs::read_to_string(roots.trim()).unwrap_or_default();
        let server = std::fs::read_to_string(dir.join("server.crt"))
            .map_err(|e| format!("cannot read the certificate: {e}"))?;
        bundle.push_str(&server);
        let path = dir.join("ca-bundle.pem");
        std::fs::write(&path, bundle)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        Ok(dir)
    }
}

/// Stops its emulator when dropped, however the run that started it ends.
#[derive(Debug)]
pub struct StopOnDrop(pub Emulator);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// The variables that make a client trust the certificate in `tls`.
fn tls_env(tls: &Path) -> Vec<(String, String)> {
    let bundle = tls.join("ca-bundle.pem").display().to_string();
    vec![
        ("SSL_CERT_FILE".into(), bundle.clone()),
        ("AWS_CA_BUNDLE".into(), bundle),
        (
            "NODE_EXTRA_CA_CERTS".into(),
            tls.join("server.crt").display().to_string(),
        ),
    ]
}

fn iam_enforced() -> bool {
    std::env::var("OUTBOX_EMULATOR_IAM").map_or(true, |v| v != "off")
}

fn venv(s: &Session, kind: Kind) -> PathBuf {
    s.path(".venv").join(kind.name())
}

/// Installs `kind` into `.venv/<name>` from its pinned requirements, unless the
/// installed ones are those.
pub fn install(s: &Session, kind: Kind) -> Result {
    let req = s.path(&format!("tests/emulator/{}.txt", kind.name()));
    crate::venv::ensure(s, &venv(s, kind), &req, kind.name())
}

/// A free TCP port on loopback.
fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| format!("no free port on 127.0.0.1: {e}"))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("no free port on 127.0.0.1: {e}"))
}

/// `export K=V ...` lines for a shell's `eval`.
pub fn shell_exports(vars: &[(String, String)]) -> String {
    if vars.is_empty() {
        return String::new();
    }
    let pairs: Vec<String> = vars.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("export {}", pairs.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_exports_name_the_bundle_and_the_certificate() {
        let vars = tls_env(Path::new("/s/tls"));
        assert_eq!(
            shell_exports(&vars),
            "export SSL_CERT_FILE=/s/tls/ca-bundle.pem AWS_CA_BUNDLE=/s/tls/ca-bundle.pem NODE_EXTRA_CA_CERTS=/s/tls/server.crt"
        );
        assert_eq!(shell_exports(&[]), "");
    }

    #[test]
    fn emulator_names_round_trip_and_others_are_refused() {
        for kind in [Kind::Ministack, Kind::Moto] {
            assert_eq!(Kind::parse(kind.name()), Some(kind));
        }
        assert_eq!(Kind::parse("localstack"), None);
    }
}
