//! The `gpg` renderer (`salt/renderers/gpg.py`): every PGP-armored block in the rendered data
//! (`-----BEGIN PGP MESSAGE----- ... -----END PGP MESSAGE-----`, in any string value at any
//! depth; keys are left alone, as Salt's) is replaced by its plaintext, decrypted by the
//! system's `gpg` with the keys in `gpg_keydir` (`gpg --homedir DIR --status-fd 2 --no-tty
//! --batch -d`, the ciphertext on stdin).
//!
//! Unlike Salt's default of logging a warning and keeping the ciphertext, a block that
//! cannot be decrypted is an error (Salt's `gpg_decrypt_must_succeed: True`) naming the SLS,
//! the data's key path and the key directory. Neither the plaintext nor gpg's output on
//! stdout ever reaches an error or a log line; only gpg's own `gpg:` diagnostic is quoted.
//!
//! The walk over the data ([`decrypt_value`]) is pure and takes the decryption as a
//! function, so it is tested without a keyring; [`GpgCommand`] is the real one.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use super::RenderError;

const BEGIN: &str = "-----BEGIN PGP MESSAGE-----";
const END: &str = "-----END PGP MESSAGE-----";

/// The key directory the renderer uses: `gpg_keydir` from the options, else Salt's default
/// `<config_dir>/gpgkeys` (`config_dir` being the directory of the config file), else
/// `/etc/salt/gpgkeys`.
pub fn key_dir(opts: &Value) -> PathBuf {
    if let Some(dir) = opts.get("gpg_keydir").and_then(Value::as_str)
        && !dir.is_empty()
    {
        return PathBuf::from(dir);
    }
    let config_dir = opts
        .get("config_dir")
        .and_then(Value::as_str)
        .map(PathBuf::from)
        .or_else(|| {
            opts.get("conf_file")
                .and_then(Value::as_str)
                .and_then(|f| Path::new(f).parent().map(Path::to_path_buf))
        })
        .unwrap_or_else(|| PathBuf::from("/etc/salt"));
    config_dir.join("gpgkeys")
}

/// Decrypts PGP blocks with the system's `gpg` and one key directory.
pub struct GpgCommand {
    /// The `--homedir` handed to gpg (`gpg_keydir`).
    pub homedir: PathBuf,
    /// The gpg binary (`gpg`, found on `PATH`).
    pub program: PathBuf,
}

impl GpgCommand {
    /// gpg from `PATH` with `homedir`.
    pub fn new(homedir: PathBuf) -> Self {
        GpgCommand {
            homedir,
            program: PathBuf::from("gpg"),
        }
    }

    /// Decrypts one armored block. The error is gpg's last `gpg:` diagnostic line (never
    /// its stdout), or why gpg could not be run.
    pub fn decrypt(&self, armored: &str) -> Result<String, String> {
        let mut child = Command::new(&self.program)
            .arg("--homedir")
            .arg(&self.homedir)
            .args(["--status-fd", "2", "--no-tty", "--batch", "-d"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", self.program.display()))?;
        let mut stdin = child.stdin.take().ok_or("gpg has no stdin")?;
        let input = armored.to_string();
        // Written on its own thread so a large block cannot deadlock against gpg's output.
        let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
        let out = child
            .wait_with_output()
            .map_err(|e| format!("gpg did not finish: {e}"))?;
        let _ = writer.join();
        // Salt counts any output as the plaintext, whatever gpg's status.
        if !out.stdout.is_empty() {
            return String::from_utf8(out.stdout)
                .map_err(|_| "the plaintext is not UTF-8 text".to_string());
        }
        let stderr = String::from_utf8_lossy(&out.stderr);
        let why = stderr
            .lines()
            .rfind(|l| l.starts_with("gpg:"))
            .map(|l| l.trim().to_string())
            .unwrap_or_else(|| format!("gpg exited with {}", out.status));
        Err(why)
    }
}

/// Replaces every armored block in `text` by `decrypt`'s answer; `Ok(None)` when the text
/// holds no block. As Salt's: a literal `\n` (two characters) inside a block is a newline,
/// and trailing newlines of the result are stripped once a block was replaced.
pub fn decrypt_text(
    text: &str,
    decrypt: &mut dyn FnMut(&str) -> Result<String, String>,
) -> Result<Option<String>, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut found = false;
    while let Some(start) = rest.find(BEGIN) {
        let Some(end_rel) = rest[start..].find(END) else {
            break;
        };
        let end = start + end_rel + END.len();
        out.push_str(&rest[..start]);
        out.push_str(&decrypt(&rest[start..end].replace("\\n", "\n"))?);
        found = true;
        rest = &rest[end..];
    }
    if !found {
        return Ok(None);
    }
    out.push_str(rest);
    Ok(Some(out.trim_end_matches('\n').to_string()))
}

/// Decrypts every armored block in the string values of `data`, at any depth. A failure is
/// `(key path, why)`: the path as `a:b:0` (Salt's delimiter), never the value.
pub fn decrypt_value(
    data: &mut Value,
    decrypt: &mut dyn FnMut(&str) -> Result<String, String>,
) -> Result<(), (String, String)> {
    fn walk(
        v: &mut Value,
        path: &mut Vec<String>,
        decrypt: &mut dyn FnMut(&str) -> Result<String, String>,
    ) -> Result<(), (String, String)> {
        match v {
            Value::String(s) => match decrypt_text(s, decrypt) {
                Ok(Some(plain)) => *s = plain,
                Ok(None) => {}
                Err(why) => return Err((path.join(":"), why)),
            },
            Value::Array(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    path.push(i.to_string());
                    walk(item, path, decrypt)?;
                    path.pop();
                }
            }
            Value::Object(map) => {
                for (k, item) in map.iter_mut() {
                    path.push(k.clone());
                    walk(item, path, decrypt)?;
                    path.pop();
                }
            }
            _ => {}
        }
        Ok(())
    }
    walk(data, &mut Vec::new(), decrypt)
}

/// The renderer step: decrypts `data` with the keys of `gpg_keydir` in `opts`. `sls` names
/// the file in the error.
pub fn render(mut data: Value, sls: &str, opts: &Value) -> Result<Value, RenderError> {
    let dir = key_dir(opts);
    let gpg = GpgCommand::new(dir.clone());
    let mut decrypt = |block: &str| gpg.decrypt(block);
    decrypt_value(&mut data, &mut decrypt).map_err(|(path, why)| RenderError {
        message: undecryptable(sls, &path, &dir, &why),
        line: None,
    })?;
    Ok(data)
}

/// The error for a value that could not be decrypted: the SLS, the key path, the key
/// directory and gpg's reason; never the value.
pub fn undecryptable(sls: &str, path: &str, dir: &Path, why: &str) -> String {
    let at = if path.is_empty() {
        "the rendered data".to_string()
    } else {
        format!("key '{path}'")
    };
    let sls = if sls.is_empty() { "<string>" } else { sls };
    format!(
        "Could not decrypt the PGP message at {at} in SLS '{sls}' with the keys in gpg_keydir {}: {why}",
        dir.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn block(n: u32) -> String {
        format!("{BEGIN}\n\nhQEMA{n}\n=abcd\n{END}")
    }

    fn fake(block: &str) -> Result<String, String> {
        if block.contains("hQEMA") && !block.contains("hQEMA9") {
            let n = block.split("hQEMA").nth(1).unwrap().chars().next().unwrap();
            Ok(format!("secret{n}"))
        } else {
            Err("gpg: decryption failed: No secret key".into())
        }
    }

    #[test]
    fn blocks_in_nested_strings_are_replaced_and_keys_left_alone() {
        let key = block(7);
        let mut data = json!({
            "db": {"password": block(1), "hosts": ["plain", block(2)]},
            "motd": format!("before {} after", block(3)),
            "n": 3, "flag": true,
        });
        data.as_object_mut()
            .unwrap()
            .insert(key.clone(), json!("k"));
        decrypt_value(&mut data, &mut fake).unwrap();
        assert_eq!(data["db"]["password"], "secret1");
        assert_eq!(data["db"]["hosts"], json!(["plain", "secret2"]));
        assert_eq!(data["motd"], "before secret3 after");
        assert_eq!(data["n"], 3);
        assert_eq!(data[&key], "k", "keys are not decrypted");
    }

    #[test]
    fn literal_backslash_n_becomes_a_newline_as_salt_does() {
        let one_line = block(4).replace('\n', "\\n");
        let mut seen = String::new();
        let mut dec = |b: &str| {
            seen = b.to_string();
            fake(b)
        };
        assert_eq!(
            decrypt_text(&one_line, &mut dec).unwrap().as_deref(),
            Some("secret4")
        );
        assert_eq!(seen, block(4));
    }

    #[test]
    fn text_without_a_block_is_untouched() {
        assert_eq!(decrypt_text("a\\nb", &mut fake).unwrap(), None);
        assert_eq!(
            decrypt_text(&format!("{BEGIN} unterminated"), &mut fake).unwrap(),
            None
        );
    }

    #[test]
    fn a_failure_names_the_key_path_and_never_the_plaintext() {
        let mut data = json!({"a": {"list": ["x", block(9)]}, "ok": block(1)});
        let (path, why) = decrypt_value(&mut data, &mut fake).unwrap_err();
        assert_eq!(path, "a:list:1");
        let msg = undecryptable("secrets.db", &path, Path::new("/etc/salt/gpgkeys"), &why);
        assert_eq!(
            msg,
            "Could not decrypt the PGP message at key 'a:list:1' in SLS 'secrets.db' with the \
             keys in gpg_keydir /etc/salt/gpgkeys: gpg: decryption failed: No secret key"
        );
    }

    #[test]
    fn key_dir_defaults_as_salt() {
        assert_eq!(key_dir(&json!({"gpg_keydir": "/k"})), PathBuf::from("/k"));
        assert_eq!(
            key_dir(&json!({"config_dir": "/etc/saltq"})),
            PathBuf::from("/etc/saltq/gpgkeys")
        );
        assert_eq!(
            key_dir(&json!({"conf_file": "/srv/conf/minion"})),
            PathBuf::from("/srv/conf/gpgkeys")
        );
        assert_eq!(key_dir(&json!({})), PathBuf::from("/etc/salt/gpgkeys"));
    }

    /// A key pair made by the real gpg in a temp homedir, and `value` encrypted to it.
    fn keyring_and_cipher(value: &str) -> (tempfile::TempDir, String) {
        let home = tempfile::tempdir().unwrap();
        let gpg = |args: &[&str], input: Option<&str>| {
            let mut child = Command::new("gpg")
                .arg("--homedir")
                .arg(home.path())
                .args([
                    "--batch",
                    "--no-tty",
                    "--pinentry-mode",
                    "loopback",
                    "--passphrase",
                    "",
                ])
                .args(args)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("gpg is installed (.ci/run installs gnupg)");
            if let Some(i) = input {
                child.stdin.take().unwrap().write_all(i.as_bytes()).unwrap();
            }
            drop(child.stdin.take());
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8(out.stdout).unwrap()
        };
        gpg(
            &[
                "--quick-gen-key",
                "saltq test <test@saltq.invalid>",
                "future-default",
                "default",
                "never",
            ],
            None,
        );
        let cipher = gpg(
            &[
                "--armor",
                "--trust-model",
                "always",
                "-r",
                "test@saltq.invalid",
                "-e",
            ],
            Some(value),
        );
        (home, cipher)
    }

    #[test]
    fn the_real_gpg_decrypts_a_yaml_gpg_sls_and_a_wrong_keydir_is_a_clear_error() {
        let (home, cipher) = keyring_and_cipher("s3cr3t-value");
        let indented = cipher.trim_end().replace('\n', "\n    ");
        let sls = format!("#!yaml|gpg\ndb:\n  password: |\n    {indented}\n  user: app\n");
        let rc = |dir: &Path| crate::render::RenderContext {
            ctx: saltq_exec::CallContext::local(json!({}), json!({})),
            grains: json!({}),
            pillar: json!({}),
            opts: json!({"gpg_keydir": dir.display().to_string()}),
            saltenv: "base".into(),
            sls: "secrets.db".into(),
            source: "secrets/db.sls".into(),
            extra: Default::default(),
        };
        let data = crate::render::render_sls(&sls, &rc(home.path())).unwrap();
        assert_eq!(
            data,
            json!({"db": {"password": "s3cr3t-value", "user": "app"}})
        );

        let empty = tempfile::tempdir().unwrap();
        let err = crate::render::render_sls(&sls, &rc(empty.path())).unwrap_err();
        assert!(err.message.contains("SLS 'secrets.db'"), "{}", err.message);
        assert!(err.message.contains("key 'db:password'"), "{}", err.message);
        assert!(
            err.message.contains(&empty.path().display().to_string()),
            "{}",
            err.message
        );
        assert!(!err.message.contains("s3cr3t"), "{}", err.message);
    }
}
