//! The rule table: one entry per kind of credential, with the keywords that must appear
//! before its pattern is even compiled, and the entropy a match needs to count.
//!
//! Patterns follow the public gitleaks/trufflehog catalogue (see the research note), written
//! for Rust's `regex`. `E` in gitleaks' table, the end of a token, is spelt out as
//! `(?:[\x60'"\s;,:)]|\\[nr]|$)` (with `:` added: `curl -u sk_live_…:` is how Stripe
//! documents its keys).

/// How sure a match is a real secret.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    /// Likely noise; reported as a warning that can be allowlisted by a human.
    Low,
    /// A credential format with a distinctive prefix or structure; blocks.
    High,
}

/// One kind of secret.
pub struct Rule {
    /// Stable id, printed in findings and redactions.
    pub id: &'static str,
    /// What it is, for humans.
    pub description: &'static str,
    /// Lower-case substrings, one of which must occur in the text for the pattern to run.
    pub keywords: &'static [&'static str],
    /// The pattern; the secret is the group named `secret`, else group 1, else the match.
    pub pattern: &'static str,
    /// Minimum Shannon entropy (bits per character) of the secret, if any.
    pub entropy: Option<f64>,
    /// How sure a match is.
    pub confidence: Confidence,
}

const END: &str = r#"(?:[\x60'"\s;,:)]|\\[nr]|$)"#;

/// Every rule, high-confidence ones first.
pub fn all() -> &'static [Rule] {
    RULES
}

/// Patterns are plain strings in the table; those that end in a token boundary get [`END`]
/// appended by [`pattern_of`].
pub(super) fn pattern_of(rule: &Rule) -> String {
    rule.pattern.replace("{END}", END)
}

static RULES: &[Rule] = &[
    Rule {
        id: "aws-access-key-id",
        description: "AWS access key id",
        keywords: &["akia", "asia", "abia", "acca", "a3t"],
        pattern: r"\b(?P<secret>(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16})\b",
        entropy: Some(3.0),
        confidence: Confidence::High,
    },
    Rule {
        id: "aws-secret-access-key",
        description: "AWS secret access key next to its key id",
        keywords: &["aws", "akia", "asia"],
        pattern: r#"(?i)aws.{0,20}?(?:secret|key).{0,20}?['"\s:=]+(?P<secret>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+]|$)"#,
        entropy: Some(4.25),
        confidence: Confidence::High,
    },
    Rule {
        id: "private-key",
        description: "private key block (RSA, EC, OpenSSH, PGP, …)",
        keywords: &["private key"],
        pattern: r"(?i)(?P<secret>-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----[\s\S-]{64,}?KEY(?: BLOCK)?-----)",
        entropy: None,
        confidence: Confidence::High,
    },
    Rule {
        id: "github-pat",
        description: "GitHub personal access token",
        keywords: &["ghp_"],
        pattern: r"\b(?P<secret>ghp_[0-9a-zA-Z]{36})\b",
        entropy: Some(3.0),
        confidence: Confidence::High,
    },
    Rule {
        id: "github-fine-grained-pat",
        description: "GitHub fine-grained personal access token",
        keywords: &["github_pat_"],
        pattern: r"\b(?P<secret>github_pat_\w{82})\b",
        entropy: Some(3.0),
        confidence: Confidence::High,
    },
    Rule {
        id: "github-oauth",
        description: "GitHub OAuth access token",
        keywords: &["gho_"],
        pattern: r"\b(?P<secret>gho_[0-9a-zA-Z]{36})\b",
        entropy: Some(3.0),
        confidence: Confidence::High,
    },
    Rule {
        id: "github-app-token",
        description: "GitHub app user-to-server or server-to-server token",
        keywords: &["ghu_", "ghs_"],
        pattern: r"\b(?P<secret>(?:ghu|ghs)_[0-9a-zA-Z]{36})\b",
        entropy: Some(3.0),
        confidence: Confidence::High,
    },
    Rule {
        id: "github-refresh-token",
        description: "GitHub refresh token",
        keywords: &["ghr_"],
        pattern: r"\b(?P<secret>ghr_[0-9a-zA-Z]{36})\b",
        entropy: Some(3.0),
        confidence: Confidence::High,
    },
    Rule {
        id: "gitlab-pat",
        description: "GitLab personal access token",
        keywords: &["glpat-"],
        pattern: r"\b(?P<secret>glpat-[\w-]{20})\b",
        entropy: Some(3.0),
        confidence: Confidence::High,
    },
    Rule {
        id: "slack-bot-token",
        description: "Slack bot token",
        keywords: &["xoxb-"],
        pattern: r"\b(?P<secret>xoxb-[0-9]{10,13}-[0-9]{10,13}[a-zA-Z0-9-]*)",
        entropy: Some(3.0),
        confidence: Confidence::High,
    },
    Rule {
        id: "slack-user-token",
        description: "Slack user or enterprise token",
        keywords: &["xoxp-", "xoxe-"],
        pattern: r"\b(?P<secret>xox[pe](?:-[0-9]{10,13}){3}-[a-zA-Z0-9-]{28,34})",
        entropy: Some(2.0),
        confidence: Confidence::High,
    },
    Rule {
        id: "slack-webhook",
        description: "Slack incoming webhook URL",
        keywords: &["hooks.slack.com"],
        pattern: r"(?P<secret>(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{43,56})",
        entropy: None,
        confidence: Confidence::High,
    },
    Rule {
        id: "stripe-key",
        description: "Stripe secret or restricted key",
        keywords: &[
            "sk_test_", "sk_live_", "sk_prod_", "rk_test_", "rk_live_", "rk_prod_",
        ],
        pattern: r"\b(?P<secret>(?:sk|rk)_(?:test|live|prod)_[a-zA-Z0-9]{10,99}){END}",
        entropy: Some(2.0),
        confidence: Confidence::High,
    },
    Rule {
        id: "gcp-api-key",
        description: "Google Cloud API key",
        keywords: &["aiza"],
        pattern: r"\b(?P<secret>AIza[\w-]{35}){END}",
        entropy: Some(4.0),
        confidence: Confidence::High,
    },
    Rule {
        id: "openai-api-key",
        description: "OpenAI API key",
        keywords: &["t3blbkfj"],
        pattern: r"\b(?P<secret>sk-(?:proj|svcacct|admin)-(?:[A-Za-z0-9_-]{74}|[A-Za-z0-9_-]{58})T3BlbkFJ(?:[A-Za-z0-9_-]{74}|[A-Za-z0-9_-]{58})|sk-[a-zA-Z0-9]{20}T3BlbkFJ[a-zA-Z0-9]{20}){END}",
        entropy: Some(3.0),
        confidence: Confidence::High,
    },
    Rule {
        id: "anthropic-api-key",
        description: "Anthropic API or admin key",
        keywords: &["sk-ant-"],
        pattern: r"\b(?P<secret>sk-ant-(?:api03|admin01)-[a-zA-Z0-9_\-]{93}AA){END}",
        entropy: None,
        confidence: Confidence::High,
    },
    Rule {
        id: "npm-token",
        description: "npm access token",
        keywords: &["npm_"],
        pattern: r"(?i)\b(?P<secret>npm_[a-z0-9]{36}){END}",
        entropy: Some(2.0),
        confidence: Confidence::High,
    },
    Rule {
        id: "pypi-token",
        description: "PyPI upload token",
        keywords: &["pypi-ageichlwas5vcmc"],
        pattern: r"(?P<secret>pypi-AgEIcHlwaS5vcmc[\w-]{50,1000})",
        entropy: Some(3.0),
        confidence: Confidence::High,
    },
    Rule {
        id: "huggingface-token",
        description: "Hugging Face access token",
        keywords: &["hf_"],
        pattern: r"\b(?P<secret>hf_[a-zA-Z]{34}){END}",
        entropy: Some(2.0),
        confidence: Confidence::High,
    },
    Rule {
        id: "sendgrid-api-key",
        description: "SendGrid API key",
        keywords: &["sg."],
        pattern: r"\b(?P<secret>SG\.[a-zA-Z0-9=_\-.]{66}){END}",
        entropy: Some(2.0),
        confidence: Confidence::High,
    },
    Rule {
        id: "jwt",
        description: "JSON Web Token",
        keywords: &["ey"],
        pattern: r"\b(?P<secret>ey[a-zA-Z0-9]{17,}\.ey[a-zA-Z0-9/\\_-]{17,}\.(?:[a-zA-Z0-9/\\_-]{10,}={0,2})?){END}",
        entropy: Some(3.0),
        confidence: Confidence::High,
    },
    Rule {
        id: "age-secret-key",
        description: "age encryption secret key",
        keywords: &["age-secret-key-1"],
        pattern: r"(?P<secret>AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58})",
        entropy: None,
        confidence: Confidence::High,
    },
    Rule {
        id: "azure-storage-key",
        description: "Azure storage account key in a connection string",
        keywords: &["accountkey"],
        pattern: r"(?i)AccountKey=(?P<secret>[A-Za-z0-9+/]{86}==)",
        entropy: Some(4.0),
        confidence: Confidence::High,
    },
    Rule {
        id: "shopify-token",
        description: "Shopify access token, shared secret or app password",
        keywords: &["shpat_", "shpss_", "shpca_", "shppa_"],
        pattern: r"\b(?P<secret>shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32})\b",
        entropy: Some(3.0),
        confidence: Confidence::High,
    },
    Rule {
        id: "digitalocean-token",
        description: "DigitalOcean personal access, OAuth or refresh token",
        keywords: &["dop_v1_", "doo_v1_", "dor_v1_"],
        pattern: r"\b(?P<secret>do[por]_v1_[a-f0-9]{64})\b",
        entropy: Some(3.0),
        confidence: Confidence::High,
    },
    Rule {
        id: "discord-bot-token",
        description: "Discord bot token",
        keywords: &["discord", "bot "],
        pattern: r"(?i)(?:discord|bot)[\w .-]{0,30}?['\x22:=\s]+(?P<secret>[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40})",
        entropy: Some(3.5),
        confidence: Confidence::High,
    },
    Rule {
        id: "discord-webhook",
        description: "Discord webhook URL",
        keywords: &["discord.com/api/webhooks", "discordapp.com/api/webhooks"],
        pattern: r"(?P<secret>https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d{5,20}/[A-Za-z0-9_-]{60,70})",
        entropy: None,
        confidence: Confidence::High,
    },
    Rule {
        id: "telegram-bot-token",
        description: "Telegram bot token",
        keywords: &[":aa"],
        pattern: r"\b(?P<secret>\d{8,10}:AA[A-Za-z0-9_-]{33})(?:[^A-Za-z0-9_-]|$)",
        entropy: Some(3.0),
        confidence: Confidence::High,
    },
    Rule {
        id: "mailgun-key",
        description: "Mailgun private API key",
        keywords: &["key-"],
        pattern: r"\b(?P<secret>key-[a-f0-9]{32})\b",
        entropy: Some(3.0),
        confidence: Confidence::High,
    },
    Rule {
        id: "datadog-key",
        description: "Datadog API or application key",
        keywords: &["datadog", "dd_api", "dd_app", "dd-api", "dd-app"],
        pattern: r#"(?i)(?:datadog|dd)[_-]?(?:api|app(?:lication)?)?[_-]?key['"]?\s*(?:[:=]|:=|=>)\s*['"]?(?P<secret>[a-f0-9]{40}|[a-f0-9]{32})\b"#,
        entropy: Some(3.0),
        confidence: Confidence::High,
    },
    Rule {
        id: "twilio-api-key",
        description: "Twilio API key",
        keywords: &["sk"],
        pattern: r"\b(?P<secret>SK[0-9a-fA-F]{32})\b",
        entropy: Some(3.2),
        confidence: Confidence::High,
    },
    Rule {
        id: "twilio-auth-token",
        description: "Twilio auth token",
        keywords: &["twilio"],
        pattern: r#"(?i)twilio[\w.-]{0,30}?(?:auth[_.-]?token|secret|token)['"]?\s*(?:[:=]|:=|=>)\s*['"]?(?P<secret>[0-9a-f]{32})\b"#,
        entropy: Some(3.0),
        confidence: Confidence::High,
    },
    Rule {
        id: "password-assignment",
        description: "a password written into a quoted value",
        keywords: &["passw", "pwd", "passphrase"],
        pattern: r#"(?i)(?:^|[^\w.-])[\w.-]{0,40}?(?:passw(?:or)?d|pwd|passphrase)['"]?[ \t]*(?:[:=]|:=|=>)[ \t]*['"](?P<secret>[^'"\s]{8,128})['"]"#,
        entropy: None,
        confidence: Confidence::High,
    },
    Rule {
        id: "password-in-environment",
        description: "a password set in an environment file or a shell",
        keywords: &["passw", "pwd", "passphrase"],
        pattern: r##"(?m)^[ \t]*(?:-[ \t]+|export[ \t]+)?[A-Z0-9_]*(?:PASSW(?:OR)?D|PWD|PASSPHRASE)[ \t]*=[ \t]*(?P<secret>[^\s'"#]{8,128})[ \t]*\r?$"##,
        entropy: None,
        confidence: Confidence::High,
    },
    Rule {
        id: "basic-auth-header",
        description: "HTTP Basic credentials in an Authorization header",
        keywords: &["basic"],
        pattern: r"(?i)authorization['\x22]?\s*[:=]\s*['\x22]?basic\s+(?P<secret>[A-Za-z0-9+/]{8,}={0,2})",
        entropy: Some(2.5),
        confidence: Confidence::High,
    },
    Rule {
        id: "url-with-password",
        description: "URL with an embedded password (https, ftp, ssh, smtp, …)",
        keywords: &["://"],
        pattern: r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,15}://[\w!#$%&()*+,\-.;<=>?\[\\\]^_{|}~]{1,50}:(?P<secret>[\w!#%&()*+,\-.:;<=>?\[\\\]^_{|}~][\w!#$%&()*+,\-.:;<=>?\[\\\]^_{|}~]{2,49})@[a-zA-Z0-9.-]+(?:\.[a-zA-Z]{2,})?(?::\d{1,5})?",
        entropy: None,
        confidence: Confidence::High,
    },
    Rule {
        id: "database-url-with-password",
        description: "MongoDB, Redis, PostgreSQL, MySQL or AMQP URL with a password",
        keywords: &["mongodb", "redis", "rediss", "postgres", "mysql", "amqp"],
        pattern: r"(?i)\b(?:mongodb(?:\+srv)?|rediss?|postgres(?:ql)?|mysql|amqps?)://[^\s:@/]{0,50}:(?P<secret>[^\s@/$][^\s@/]{2,87})@[-.%\w]+",
        entropy: None,
        confidence: Confidence::High,
    },
    Rule {
        id: "jdbc-password",
        description: "JDBC connection string with a password",
        keywords: &["jdbc:"],
        pattern: r"(?i)jdbc:\w{3,10}:[^\s'<>]*?password=(?P<secret>[^\s;&'<>]{3,100})",
        entropy: None,
        confidence: Confidence::High,
    },
    Rule {
        id: "generic-secret-assignment",
        description: "a value assigned to something named like a key, token, secret or password",
        keywords: &["key", "token", "secret", "passw", "pwd", "credential"],
        pattern: r#"(?i)\b[\w.-]{0,40}(?:api[_.-]?key|access[_.-]?key|secret|token|passw(?:or)?d|pwd|credential)s?[\w.-]{0,20}['"]?\s*(?:[:=]|:=|=>)\s*['"]?(?P<secret>[A-Za-z0-9_\-+/=.~!@#%^&*?]{16,128})['"]?"#,
        entropy: Some(3.5),
        confidence: Confidence::Low,
    },
];
