//! Test vectors for the scanner, written for this project: every rule must fire on its
//! positives and stay quiet on the negatives (documentation examples, placeholders, near
//! misses, ordinary code and prose).

use super::*;

/// A deterministic string of `len` characters from `alphabet` (a linear congruential walk),
/// so vectors look random enough to pass entropy thresholds without being real secrets.
fn body(alphabet: &str, len: usize, seed: u64) -> String {
    let chars: Vec<char> = alphabet.chars().collect();
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..len)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            chars[((x >> 33) % chars.len() as u64) as usize]
        })
        .collect()
}

const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const UPPER_B32: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
const LOWER_ALNUM: &str = "abcdefghijklmnopqrstuvwxyz0123456789";
const LETTERS: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const URLSAFE: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
const B64: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const AGE: &str = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L";

fn pem(kind: &str, seed: u64) -> String {
    let lines: Vec<String> = (0..4).map(|i| body(B64, 64, seed + i)).collect();
    format!(
        "-----BEGIN {kind}-----\n{}\n-----END {kind}-----\n",
        lines.join("\n")
    )
}

/// An OpenSSH private key as `ssh-keygen -t ed25519` writes it: the fixed header of every
/// such key (`openssh-key-v1`, `none`, `ssh-ed25519`, full of `AAAA`) and a random body.
fn openssh_key(seed: u64) -> String {
    let header = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW";
    let lines = [
        format!("{header}{}", body(B64, 70 - header.len().min(70), seed)),
        body(B64, 70, seed + 1),
        body(B64, 70, seed + 2),
        format!("{}AAAAAAECAwQF", body(B64, 20, seed + 3)),
    ];
    format!(
        "-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n-----END OPENSSH PRIVATE KEY-----\n",
        lines.join("\n")
    )
}

/// One secret of every kind the scanner knows, with the rule that must find it.
///
/// Why this function is long: it is a table, one entry per rule; a table reads best whole.
fn positives() -> Vec<(String, &'static str)> {
    let b = body;
    vec![
        (
            format!("aws_access_key_id = AKIA{}", b(UPPER_B32, 16, 1)),
            "aws-access-key-id",
        ),
        (
            format!("export AWS_ACCESS_KEY_ID=ASIA{}", b(UPPER_B32, 16, 2)),
            "aws-access-key-id",
        ),
        (
            format!(
                "https://s3.amazonaws.com/b/o?AWSAccessKeyId=AKIA{}&Expires=1",
                b(UPPER_B32, 16, 3)
            ),
            "aws-access-key-id",
        ),
        (
            format!("aws_secret_access_key = {}", b(B64, 40, 4)),
            "aws-secret-access-key",
        ),
        (pem("RSA PRIVATE KEY", 5), "private-key"),
        (pem("OPENSSH PRIVATE KEY", 6), "private-key"),
        (pem("EC PRIVATE KEY", 7), "private-key"),
        (pem("PGP PRIVATE KEY BLOCK", 8), "private-key"),
        (format!("token: ghp_{}", b(ALNUM, 36, 9)), "github-pat"),
        (
            format!("export GITHUB_TOKEN=ghp_{}", b(ALNUM, 36, 10)),
            "github-pat",
        ),
        (
            format!("github_pat_{}", b(&format!("{ALNUM}_"), 82, 11)),
            "github-fine-grained-pat",
        ),
        (format!("gho_{}", b(ALNUM, 36, 12)), "github-oauth"),
        (format!("ghu_{}", b(ALNUM, 36, 13)), "github-app-token"),
        (format!("ghs_{}", b(ALNUM, 36, 14)), "github-app-token"),
        (format!("ghr_{}", b(ALNUM, 36, 15)), "github-refresh-token"),
        (
            format!("GITLAB_TOKEN=glpat-{}", b(URLSAFE, 20, 16)),
            "gitlab-pat",
        ),
        (
            format!(
                "SLACK_BOT_TOKEN=xoxb-1234567890-9876543210-{}",
                b(ALNUM, 24, 17)
            ),
            "slack-bot-token",
        ),
        (
            format!("xoxp-1234567890-2345678901-3456789012-{}", b(ALNUM, 32, 18)),
            "slack-user-token",
        ),
        (
            format!(
                "url = \"https://hooks.slack.com/services/{}\"",
                b(B64, 44, 19)
            ),
            "slack-webhook",
        ),
        (
            format!("stripe.api_key = \"sk_live_{}\"", b(ALNUM, 24, 20)),
            "stripe-key",
        ),
        (format!("rk_test_{} ", b(ALNUM, 30, 21)), "stripe-key"),
        (format!("'sk_prod_{}'", b(ALNUM, 40, 22)), "stripe-key"),
        (
            format!("maps_key: AIza{}", b(URLSAFE, 35, 23)),
            "gcp-api-key",
        ),
        (
            format!(
                "OPENAI_API_KEY=sk-proj-{}T3BlbkFJ{}",
                b(URLSAFE, 74, 24),
                b(URLSAFE, 74, 25)
            ),
            "openai-api-key",
        ),
        (
            format!("sk-{}T3BlbkFJ{}", b(ALNUM, 20, 26), b(ALNUM, 20, 27)),
            "openai-api-key",
        ),
        (
            format!("ANTHROPIC_API_KEY=sk-ant-api03-{}AA", b(URLSAFE, 93, 28)),
            "anthropic-api-key",
        ),
        (
            format!("sk-ant-admin01-{}AA\n", b(URLSAFE, 93, 29)),
            "anthropic-api-key",
        ),
        (
            format!(
                "//registry.npmjs.org/:_authToken=npm_{}",
                b(LOWER_ALNUM, 36, 30)
            ),
            "npm-token",
        ),
        (
            format!("password = pypi-AgEIcHlwaS5vcmc{}", b(URLSAFE, 60, 31)),
            "pypi-token",
        ),
        (
            format!("HF_TOKEN=hf_{}", b(LETTERS, 34, 32)),
            "huggingface-token",
        ),
        (
            format!(
                "SENDGRID_API_KEY=SG.{}.{}",
                b(URLSAFE, 22, 33),
                b(URLSAFE, 43, 34)
            ),
            "sendgrid-api-key",
        ),
        (
            format!(
                "Authorization: Bearer eyJ{}.eyJ{}.{}",
                b(ALNUM, 20, 35),
                b(ALNUM, 40, 36),
                b(URLSAFE, 43, 37)
            ),
            "jwt",
        ),
        (
            format!("AGE-SECRET-KEY-1{}", b(AGE, 58, 38)),
            "age-secret-key",
        ),
        (
            "remote = https://deploy:Tr0ub4dor3xK9@git.internal.net/repo.git".into(),
            "url-with-password",
        ),
        (
            "DATABASE_URL=postgres://app:Pa55w0rd!Qz@db.internal:5432/app".into(),
            "database-url-with-password",
        ),
        (
            "mongodb+srv://admin:hunter2hunter2@cluster0.mongodb.net/test".into(),
            "database-url-with-password",
        ),
        (
            "REDIS_URL=redis://default:r3d1sS3cretKey@cache:6379/0".into(),
            "database-url-with-password",
        ),
        (
            "mysql://root:t00rT00r99@localhost/shop".into(),
            "database-url-with-password",
        ),
        (
            "amqp://guest:rabbitMQpass99@mq.internal:5672".into(),
            "database-url-with-password",
        ),
        (
            "jdbc:postgresql://db:5432/app?user=app&password=JdbcS3cret42".into(),
            "jdbc-password",
        ),
        (
            format!("API_KEY = \"{}\"", b(ALNUM, 24, 39)),
            "generic-secret-assignment",
        ),
        (
            format!("client_secret: {}", b(ALNUM, 32, 40)),
            "generic-secret-assignment",
        ),
        (
            format!("{{\"auth_token\": \"{}\"}}", b(ALNUM, 28, 41)),
            "generic-secret-assignment",
        ),
        (
            format!("db.password={}", b(ALNUM, 20, 42)),
            "generic-secret-assignment",
        ),
        (openssh_key(70), "private-key"),
        (
            format!(
                "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={}==;EndpointSuffix=core.windows.net",
                b(B64, 86, 71)
            ),
            "azure-storage-key",
        ),
        (format!("SHOPIFY_TOKEN=shpat_{}", b("0123456789abcdef", 32, 72)), "shopify-token"),
        (format!("shpss_{}", b("0123456789abcdef", 32, 73)), "shopify-token"),
        (format!("DO_TOKEN=dop_v1_{}", b("0123456789abcdef", 64, 74)), "digitalocean-token"),
        (
            format!(
                "DISCORD_BOT_TOKEN=\"M{}.{}.{}\"",
                b(ALNUM, 25, 75),
                b(URLSAFE, 6, 76),
                b(URLSAFE, 38, 77)
            ),
            "discord-bot-token",
        ),
        (
            format!(
                "https://discord.com/api/webhooks/123456789012345678/{}",
                b(URLSAFE, 68, 78)
            ),
            "discord-webhook",
        ),
        (format!("bot = Bot(\"5123456789:AA{}\")", b(URLSAFE, 33, 79)), "telegram-bot-token"),
        (format!("MAILGUN_API_KEY=key-{}", b("0123456789abcdef", 32, 80)), "mailgun-key"),
        (format!("DD_API_KEY={}", b("0123456789abcdef", 32, 81)), "datadog-key"),
        (format!("datadog_app_key: \"{}\"", b("0123456789abcdef", 40, 82)), "datadog-key"),
        (format!("TWILIO_API_KEY=SK{}", b("0123456789abcdef", 32, 83)), "twilio-api-key"),
        (
            format!("curl -H 'Authorization: Basic {}=='", b(B64, 30, 84)),
            "basic-auth-header",
        ),
        (
            format!("REDIS_URL=redis://:{}@cache.internal:6379/0", b(ALNUM, 20, 85)),
            "database-url-with-password",
        ),
        (
            format!("ftp://deploy:{}@files.example.org/upload", b(ALNUM, 18, 86)),
            "url-with-password",
        ),
        (
            format!("db_password = \"{}!{}#{}\"", b(ALNUM, 8, 87), b(ALNUM, 6, 88), b(ALNUM, 5, 89)),
            "password-assignment",
        ),
        // Passwords of every shape where a password is set: hex, special characters, an
        // environment file, a compose file's list.
        (
            format!("password = \"{}\"", b("0123456789abcdef", 16, 90)),
            "password-assignment",
        ),
        (
            format!("\"password\": \"{}$:{};{}\"", b(ALNUM, 6, 91), b(ALNUM, 5, 92), b(ALNUM, 4, 93)),
            "password-assignment",
        ),
        (
            format!("DB_PASSWORD='{}(x)[y],{{z}}|{}'", b(ALNUM, 6, 94), b(ALNUM, 6, 95)),
            "password-assignment",
        ),
        (
            format!("DB_PASSWORD={}", b("0123456789abcdef", 16, 96)),
            "password-in-environment",
        ),
        (
            format!("  - POSTGRES_PASSWORD={}:{}", b(ALNUM, 8, 97), b(ALNUM, 6, 98)),
            "password-in-environment",
        ),
        (
            format!("TWILIO_AUTH_TOKEN={}", b("0123456789abcdef", 32, 99)),
            "twilio-auth-token",
        ),
        (
            format!("twilio:\n  auth_token: \"{}\"", b("0123456789abcdef", 32, 100)),
            "generic-secret-assignment",
        ),
        (
            format!("twilio_token: \"{}\"", b("0123456789abcdef", 32, 101)),
            "twilio-auth-token",
        ),
    ]
}

fn negatives() -> Vec<String> {
    let b = body;
    vec![
        // What tests and configuration templates put where a password goes.
        "client.login(username=\"alice\", password=\"testpass123\")".into(),
        "password = \"P@ssw0rd\"".into(),
        "password: \"{{ vault_db_password }}\"".into(),
        "DB_PASSWORD=${DB_PASSWORD}".into(),
        "DB_PASSWORD=secretpassword".into(),
        "DB_PASSWORD=$(cat /run/secrets/db_password)".into(),
        "\"password\": \"<your password here>\"".into(),
        "PASSWORD_MIN_LENGTH=12".into(),
        "password_field = \"password\"".into(),
        "if password == \"hunter2hunter2\":".into(),
        "db_password: \"%(db_password)s\"".into(),
        "TWILIO_ACCOUNT_SID=AC00000000000000000000000000000000".into(),
        "aws_access_key_id = AKIAIOSFODNN7EXAMPLE".into(),
        format!("ghp_{}", "x".repeat(36)),
        format!("ghp_{}", b(ALNUM, 35, 50)),
        pem("PUBLIC KEY", 51),
        pem("CERTIFICATE", 52),
        "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----".into(),
        "sk_live_xxxxxxxxxxxxxxxxxxxxxxxx".into(),
        "sk_test_4eC3".into(),
        format!("AIza{}", b(URLSAFE, 20, 53)),
        "DATABASE_URL=postgres://user:${DB_PASSWORD}@db:5432/app".into(),
        "DATABASE_URL=postgres://localhost/app".into(),
        "DATABASE_URL=postgres://user:password@localhost/app".into(),
        "see https://docs.rs/gix/0.90.0/gix/ for the API".into(),
        "clone https://deploy@git.internal.net/repo.git".into(),
        "https://user:****@host.internal/path".into(),
        "aws_key_sha = da39a3ee5e6b4b0d3255bfef95601890afd80709".into(),
        "password = \"changeme\"".into(),
        "API_KEY = os.environ[\"API_KEY\"]".into(),
        "token: ${{ secrets.GITHUB_TOKEN }}".into(),
        "SLACK_BOT_TOKEN=xoxb-your-token-here".into(),
        "https://hooks.slack.com/services/T000/B000/XXXX".into(),
        "header = eyJhbGciOiJIUzI1NiJ9".into(),
        "path = my_hf_path_to_the_model_directory_name_here".into(),
        "npm_config_cache=/tmp/npm".into(),
        "AGE-SECRET-KEY-1QPZRY9X8".into(),
        "sk-ant-api03-short".into(),
        format!("sk-{}", b(ALNUM, 48, 54)),
        "SG.short.value".into(),
        "The private key must never be committed to the repository.".into(),
        "Set `GITHUB_TOKEN` in the CI settings before the first run.".into(),
        "password_hash = $2b$12$KIXQJ1nN5hY0l8m3dT6mUeX1yQ4rO7pB9cV2nM6kL8jH5gF3dS1a".into(),
        "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.".into(),
        "let token = Token::new(kind, span);".into(),
        "api_key_name = \"x\"".into(),
        "AKIAabcdefghijklmnop".into(),
        "github_pat_tooShort".into(),
        "glpat-0123456789".into(),
        "server = http://localhost:8080/health".into(),
        "contact: mailto:support@shop.internal".into(),
        "secret_name = \"prod-db\"  # the name of the secret in the vault, not its value".into(),
        "const TOKEN_PLACEHOLDER: &str = \"<your token here>\";".into(),
        "aws_secret_access_key = <YOUR_SECRET_ACCESS_KEY_GOES_HERE_PLEASE_ADD>".into(),
        "-----BEGIN OPENSSH PRIVATE KEY-----\n...\n-----END OPENSSH PRIVATE KEY-----".into(),
        "AccountKey=your-account-key==".into(),
        "shpat_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx".into(),
        "dop_v1_short".into(),
        "https://discord.com/api/webhooks/123/short".into(),
        "at 12:34:56:AA the build ran".into(),
        "key-value store with key-based lookups".into(),
        "DD_API_KEY=${DD_API_KEY}".into(),
        "SKIP_TESTS=1 and SK_LIMIT=32".into(),
        "Authorization: Bearer ${TOKEN}".into(),
        "Authorization: Basic <credentials>".into(),
        "REDIS_URL=redis://cache.internal:6379/0".into(),
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c".into(),
        "git clone ssh://git@github.com/org/repo.git".into(),
    ]
}

#[test]
fn every_rule_compiles() {
    for rule in rules() {
        assert!(compile(rule).is_some(), "{} does not compile", rule.id);
    }
    assert!(
        rules()
            .iter()
            .filter(|r| r.confidence == Confidence::High)
            .count()
            >= 20
    );
}

#[test]
fn positives_are_found_by_their_rule() {
    let positives = positives();
    assert!(positives.len() >= 40);
    for (text, rule) in &positives {
        let found = scan_text(text, None, Options::default());
        assert!(
            found.iter().any(|f| f.rule == *rule),
            "{rule} missed in {text:?}: {found:?}"
        );
        for f in &found {
            assert!(
                !text.contains(&f.excerpt) || f.excerpt.len() < 12,
                "the excerpt must not carry the secret"
            );
        }
    }
}

#[test]
fn negatives_are_quiet() {
    let negatives = negatives();
    assert!(negatives.len() >= 40);
    for text in &negatives {
        let found = scan_text(text, None, Options::default());
        assert!(found.is_empty(), "false positive in {text:?}: {found:?}");
    }
}

#[test]
fn a_specific_rule_wins_over_the_generic_one() {
    let text = format!("GITHUB_TOKEN = ghp_{}", body(ALNUM, 36, 60));
    let found = scan_text(&text, None, Options::default());
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].rule, "github-pat");
    assert_eq!(found[0].confidence, Confidence::High);
}

#[test]
fn allow_comments_only_for_humans() {
    let text = format!(
        "a = 1\nkey = \"sk_live_{}\"  # bmad:allow test fixture\n",
        body(ALNUM, 24, 61)
    );
    let human = scan_text(
        &text,
        Some("t.py"),
        Options {
            honour_allow_comments: true,
        },
    );
    assert!(human.is_empty());
    let agent = scan_text(&text, Some("t.py"), Options::default());
    assert_eq!(agent.len(), 1);
    assert_eq!(agent[0].location(), "t.py:2:8");
}

#[test]
fn redaction_removes_every_secret() {
    let secret = format!("ghp_{}", body(ALNUM, 36, 62));
    let text = format!("the agent printed {secret} and then postgres://a:Qz8Lm3Vt9Kw@db/x\n");
    let redacted = redact(&text);
    assert!(!redacted.contains(&secret), "{redacted}");
    assert!(!redacted.contains("Qz8Lm3Vt9Kw"), "{redacted}");
    assert!(redacted.contains("[REDACTED:github-pat]"), "{redacted}");
    assert_eq!(redact("nothing to see"), "nothing to see");
}

#[test]
fn patches_report_file_lines_and_commits() {
    let key = format!("sk_live_{}", body(ALNUM, 24, 63));
    let patch = format!(
        "commit 1111111111111111111111111111111111111111\nAuthor: A <a@b>\n\n    add config\n\ndiff --git a/app/config.py b/app/config.py\nindex 000..111 100644\n--- a/app/config.py\n+++ b/app/config.py\n@@ -10,0 +11,2 @@ def f():\n+DEBUG = False\n+STRIPE = \"{key}\"\ndiff --git a/.env b/.env\nnew file mode 100644\n--- /dev/null\n+++ b/.env\n@@ -0,0 +1 @@\n+MODE=dev\n"
    );
    let found = scan_patch(&patch, Options::default());
    let stripe = found
        .iter()
        .find(|f| f.rule == "stripe-key")
        .expect("stripe key found");
    assert_eq!(stripe.location(), "app/config.py:12:11");
    assert_eq!(
        stripe.commit.as_deref(),
        Some("1111111111111111111111111111111111111111")
    );
    assert!(found
        .iter()
        .any(|f| f.rule == "env-file" && f.path.as_deref() == Some(".env")));
}

#[test]
fn sensitive_file_names() {
    for path in [
        ".env",
        "config/.env.production",
        "certs/server.pem",
        "id_ed25519",
        "deploy/key.p12",
        "signing.key",
    ] {
        assert!(check_path(path).is_some(), "{path}");
    }
    for path in [
        ".env.example",
        "config/.env.sample",
        ".envrc",
        "README.md",
        "src/keys.rs",
        "monkey.py",
        "keyboard.key.md",
    ] {
        assert!(check_path(path).is_none(), "{path}");
    }
}

#[test]
fn entropy_is_sane_and_never_panics() {
    assert_eq!(shannon_entropy(""), 0.0);
    assert_eq!(shannon_entropy("aaaa"), 0.0);
    assert!((shannon_entropy("ab") - 1.0).abs() < 1e-9);
    // Arbitrary bytes (as lossy text) never panic any entry point.
    for seed in 0..200 {
        let text = body(
            "ab\n\r\t +-:=@/'\"`$éß€🦀AKIAghp_sk-ant-eyJ-----BEGIN PRIVATE KEY-----xoxb-",
            300,
            seed,
        );
        let _ = scan_text(&text, None, Options::default());
        let _ = redact(&text);
        let _ = scan_patch(
            &format!("+++ b/x\n@@ -1 +1 @@\n+{text}"),
            Options::default(),
        );
    }
}

#[test]
fn files_about_to_be_stored_binary_ones_too() {
    let key = format!("AKIA{}", "Q7ZK2M4XW6RT5PLN");
    // A key inside a binary file (NULs, random bytes around it) is found in its printable run.
    let mut binary = vec![0u8, 1, 2, 0xff, 0];
    binary.extend_from_slice(format!("aws={key}").as_bytes());
    binary.extend_from_slice(&[0, 0x80, 7]);
    let found = scan_file("data/cache.bin", &binary);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].rule, "aws-access-key-id");
    // Only what blocks: a low-confidence look-alike is not a reason to keep a file out.
    assert!(scan_file("notes.txt", b"password = hunter2\n").is_empty());
    // A file that must never be stored, whatever it holds.
    assert_eq!(scan_file("deploy/.env", b"X=1\n")[0].rule, "env-file");
    assert!(scan_file("src/main.rs", b"fn main() {}\n").is_empty());
}

#[test]
fn a_password_is_told_from_a_reference_to_one_and_from_a_test_word() {
    for value in [
        "8f3a9c2e71b4d605",
        "Xk9$mP2:qR7z;w",
        "9eY)1;0>)ce:;,>|ef",
        "c2b4278a2b8b8bcc",
        "$f0X;7<1b4{0b$f7{1",
        "((((X<(d3e4]1Y;dXa",
        "aB3(x)[y],{z}|q9",
        "thisisalongerpassphrasewithvariety2024x",
    ] {
        assert!(looks_like_a_password(value), "{value}");
    }
    for value in [
        "Config.Database.Password",
        "settings.DB_PASSWORD",
        "${DB_PASSWORD}",
        "$DB_PASSWORD",
        "$(cat /run/secrets/pw)",
        "/run/secrets/db-password",
        "{{ vault_pw }}",
        "<password>",
        "%(password)s",
        "testpass123",
        "aaaaaaaaaaaaaaaa",
    ] {
        assert!(!looks_like_a_password(value), "{value}");
    }
}
