"""The redaction corpus: secrets each rule must catch, and near-misses it must leave alone."""

from __future__ import annotations

import random
import string
from collections.abc import Callable

ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"
HEX = "0123456789abcdef"
UPPER_DIGITS = string.ascii_uppercase + string.digits


def _rand(rng: random.Random, length: int, alphabet: str = ALNUM) -> str:
    """A random string that surely holds a digit, an upper and a lower case letter."""
    if alphabet in (HEX, string.digits):
        return "".join(rng.choice(alphabet) for _ in range(length - 1)) + rng.choice("0123456789")
    body = "".join(rng.choice(alphabet) for _ in range(length - 3))
    return body + rng.choice(string.digits) + rng.choice("ABCDEFGH") + rng.choice("abcdefgh")


def _upper(rng: random.Random, length: int) -> str:
    return "".join(rng.choice(UPPER_DIGITS) for _ in range(length - 1)) + "7"


def _key_body(prefix: str, rng: random.Random, lines: int = 3) -> str:
    first = prefix + _rand(rng, 64 - len(prefix), B64)
    return "\n".join([first, *(_rand(rng, 64, B64) for _ in range(lines))])


# name -> builder(rng) -> (text holding the secret, the part that must disappear)
Builder = Callable[[random.Random], tuple[str, str]]


def _simple(template: str, make: Callable[[random.Random], str]) -> Builder:
    def build(rng: random.Random) -> tuple[str, str]:
        value = make(rng)
        return template.format(v=value), value

    return build


def _pw(rng: random.Random) -> str:
    return _rand(rng, 14, ALNUM + "!%^*")


POSITIVES: dict[str, Builder] = {
    # The 14 formats once found leaking, and the prose password.
    "aws-credentials-csv-secret": _simple(
        "Access key ID,Secret access key\nAKIA" + "ABCDEFGHIJKLMNO7" + ",{v}\n",
        lambda r: _rand(r, 40, B64),
    ),
    "aws-credentials-csv-console-password": _simple(
        "User name,Password,Access key ID,Secret access key,Console login link\n"
        "deploy,{v},AKIAQWERTYUIOPASDFG7,wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY01,"
        "https://123456789012.signin.aws.amazon.com/console\n",
        _pw,
    ),
    "private-key-body-pkcs1": lambda r: (b := _key_body("MIIEpAIBAAKCAQEA", r), b),
    "private-key-body-pkcs8": lambda r: (b := _key_body("MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", r), b),
    "private-key-body-openssh": lambda r: (b := _key_body("b3BlbnNzaC1rZXktdjEAAAAA", r), b),
    "private-key-body-ec": lambda r: (b := _key_body("MHcCAQEEI", r, 1), b),
    "db-pass-env": _simple("DB_PASS={v}", _pw),
    "export-mysql-pwd": _simple("export MYSQL_PWD={v}", _pw),
    "secret-key-base": _simple("SECRET_KEY_BASE={v}", lambda r: _rand(r, 64, HEX + "ABC")),
    "azure-account-key": _simple(
        "DefaultEndpointsProtocol=https;AccountName=store1;AccountKey={v};"
        "EndpointSuffix=core.windows.net",
        lambda r: _rand(r, 86, B64) + "==",
    ),
    "azure-shared-access-key": _simple(
        "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey={v}",
        lambda r: _rand(r, 43, B64) + "=",
    ),
    "azure-sas-signature": _simple(
        "https://a.blob.core.windows.net/c/f?sv=2022-11-02&se=2026-01-01&sig={v}",
        lambda r: _rand(r, 44, ALNUM) + "%3D",
    ),
    "mysql-glued-password": _simple("mysql -u root -p{v} -h db.internal shop", _pw),
    "mysqldump-quoted-password": _simple("mysqldump -uroot -p'{v}' shop > shop.sql", _pw),
    "curl-user-password": _simple("curl -u admin:{v} https://ci.example.com/api", _pw),
    "curl-long-user-password": _simple("curl -s --user deploy:{v} https://x.example/hook", _pw),
    "netrc-one-line": _simple("machine api.example.com login bob password {v}", _pw),
    "netrc-multi-line": _simple("machine git.example.com\n  login bob\n  password {v}\n", _pw),
    "sshpass-flag": _simple("sshpass -p {v} ssh root@10.0.0.5", _pw),
    "sshpass-glued": _simple("sshpass -p'{v}' scp a.txt host:", _pw),
    "vault-token": _simple("VAULT token {v} works", lambda r: "hvs." + _rand(r, 90, ALNUM + "_-")),
    "huggingface-token": _simple("login with {v}", lambda r: "hf_" + _rand(r, 34)),
    "digitalocean-token": _simple(
        "doctl auth init -t {v}", lambda r: "dop_v1_" + _rand(r, 64, HEX)
    ),
    "telegram-bot-token": _simple(
        "bot {v} replies",
        lambda r: _rand(r, 10, string.digits) + ":AA" + _rand(r, 33, ALNUM + "_-"),
    ),
    "prose-my-password-is": _simple("my password is {v} for the router", _pw),
    "prose-password-for-was": _simple("the root password for prod was '{v}'.", _pw),
    "prose-passphrase-is": _simple("The passphrase is {v}, keep it safe", _pw),
    # High-entropy values next to keys that name a secret only sometimes.
    "app-key-base64": _simple("APP_KEY=base64:{v}", lambda r: _rand(r, 43, B64) + "="),
    "cookie-salt": _simple("SESSION_COOKIE_SALT={v}", lambda r: _rand(r, 32)),
    "signing-key-json": _simple('{{"masterKey": "{v}"}}', lambda r: _rand(r, 40)),
    "stripe-like-weak-key": _simple("export PAYMENTS_KEY={v}", lambda r: _rand(r, 32)),
    # Provider token formats.
    "anthropic": _simple("{v}", lambda r: "sk-ant-api03-" + _rand(r, 95, ALNUM + "_-")),
    "openai": _simple("{v}", lambda r: "sk-proj-" + _rand(r, 48)),
    "aws-access-key-id": _simple("{v}", lambda r: "AKIA" + _upper(r, 16)),
    "aws-secret-assignment": _simple("aws_secret_access_key = {v}", lambda r: _rand(r, 40, B64)),
    "github": _simple("{v}", lambda r: "ghp_" + _rand(r, 36)),
    "github-fine-grained": _simple("{v}", lambda r: "github_pat_" + _rand(r, 82)),
    "gitlab": _simple("{v}", lambda r: "glpat-" + _rand(r, 20)),
    "slack-bot": _simple("{v}", lambda r: "xoxb-1234567890-" + _rand(r, 24)),
    "slack-webhook": _simple("https://hooks.slack.com/services/{v}", lambda r: _rand(r, 40)),
    "stripe": _simple("{v}", lambda r: "sk_live_" + _rand(r, 24)),
    "google-api-key": _simple("{v}", lambda r: "AIza" + _rand(r, 35)),
    "google-oauth": _simple("{v}", lambda r: "ya29." + _rand(r, 60)),
    "npm": _simple("{v}", lambda r: "npm_" + _rand(r, 36)),
    "pypi": _simple("{v}", lambda r: "pypi-AgEIcHlwaS5vcmc" + _rand(r, 60)),
    "sendgrid": _simple("{v}", lambda r: "SG." + _rand(r, 22) + "." + _rand(r, 43)),
    "jwt": _simple(
        "{v}", lambda r: "eyJ" + _rand(r, 30) + ".eyJ" + _rand(r, 50) + "." + _rand(r, 43)
    ),
    "pem-block": _simple(
        "-----BEGIN RSA PRIVATE KEY-----\n{v}\n-----END RSA PRIVATE KEY-----",
        lambda r: "\n".join(_rand(r, 64, B64) for _ in range(3)),
    ),
    "url-password": _simple("postgres://app:{v}@db:5432/shop", _pw),
    "bearer": _simple("Authorization: Bearer {v}", lambda r: _rand(r, 40)),
    "basic-auth": _simple("Authorization: Basic {v}", lambda r: _rand(r, 24, B64)),
    "password-assignment": _simple("password={v}", _pw),
    "api-key-assignment": _simple("api_key: {v}", lambda r: _rand(r, 32)),
    "shopify": _simple("{v}", lambda r: "shpat_" + _rand(r, 32, HEX)),
    "twilio": _simple("{v}", lambda r: "SK" + _rand(r, 32, HEX)),
    "mailgun": _simple("{v}", lambda r: "key-" + _rand(r, 32, HEX)),
    "square": _simple("{v}", lambda r: "sq0atp-" + _rand(r, 22)),
    "databricks": _simple("{v}", lambda r: "dapi" + _rand(r, 32, HEX)),
    "linear": _simple("{v}", lambda r: "lin_api_" + _rand(r, 40)),
    "postman": _simple("{v}", lambda r: "PMAK-" + _rand(r, 24, HEX) + "-" + _rand(r, 34, HEX)),
    "grafana": _simple("{v}", lambda r: "glsa_" + _rand(r, 32) + "_" + _rand(r, 8, HEX)),
    "newrelic": _simple("{v}", lambda r: "NRAK-" + _upper(r, 27)),
    "sentry": _simple("{v}", lambda r: "sntrys_" + _rand(r, 60)),
    "supabase": _simple("{v}", lambda r: "sbp_" + _rand(r, 40, HEX)),
    "age": _simple("{v}", lambda r: "AGE-SECRET-KEY-1" + _upper(r, 58)),
    "replicate": _simple("{v}", lambda r: "r8_" + _rand(r, 37)),
    "groq": _simple("{v}", lambda r: "gsk_" + _rand(r, 52)),
    "xai": _simple("{v}", lambda r: "xai-" + _rand(r, 80)),
    "perplexity": _simple("{v}", lambda r: "pplx-" + _rand(r, 48)),
    "notion": _simple("{v}", lambda r: "ntn_" + _rand(r, 46)),
    "figma": _simple("{v}", lambda r: "figd_" + _rand(r, 40)),
    "doppler": _simple("{v}", lambda r: "dp.pt." + _rand(r, 43)),
    "terraform": _simple("{v}", lambda r: _rand(r, 14) + ".atlasv1." + _rand(r, 67)),
    "pulumi": _simple("{v}", lambda r: "pul-" + _rand(r, 40, HEX)),
    "heroku": _simple("{v}", lambda r: "HRKU-" + _rand(r, 60)),
    "atlassian": _simple("{v}", lambda r: "ATATT3" + _rand(r, 180)),
    "discord-webhook": _simple(
        "https://discord.com/api/webhooks/123456789012345678/{v}", lambda r: _rand(r, 68)
    ),
}


def _sha(rng: random.Random, length: int = 40) -> str:
    return "".join(rng.choice(HEX) for _ in range(length))


def _uuid(rng: random.Random) -> str:
    h = _sha(rng, 32)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _word(rng: random.Random) -> str:
    return rng.choice(["alpha", "report", "user", "profile", "orders", "billing", "cache"])


NEAR_MISSES: dict[str, Callable[[random.Random], str]] = {
    "git-sha": lambda r: f"commit {_sha(r)} fixed it",
    "sha256": lambda r: f"sha256 {_sha(r, 64)}",
    "md5": lambda r: f"md5 {_sha(r, 32)}",
    "uuid": lambda r: f"request {_uuid(r)} failed",
    "docker-digest": lambda r: f"image repo/app@sha256:{_sha(r, 64)}",
    "request-id": lambda r: f"request_id={_uuid(r)}",
    "random-seed": lambda r: f"RANDOM_SEED={r.randrange(10**15, 10**16)}",
    "ts-await": lambda r: f"const apiKey = await get{_word(r).title()}Key(model);",
    "ts-boolean": lambda _: "): { client: Anthropic; isOAuthToken: boolean } {",
    "ts-csrf": lambda _: "params: { _csrf_token: csrfToken },",
    "ts-optional-chain": lambda _: "const apiKey = options?.apiKey ?? getApiKey(provider);",
    "ts-shorthand": lambda _: "resolveApiKey: getApiKey,",
    "ts-async": lambda _: "const hasApiKey = async (m: Model<any>): Promise<boolean> => {",
    "ts-generic": lambda _: "token: Promise<string>;",
    "py-call": lambda _: "token = get_token()",
    "py-attribute": lambda _: "token = self.token",
    "py-environ": lambda _: "password = os.environ['DB_PASSWORD']",
    "env-name-value": lambda _: '"apiKey": "OLLAMA_API_KEY",',
    "placeholder-sk-ant": lambda _: "export ANTHROPIC_API_KEY=sk-ant-...",
    "placeholder-sk": lambda _: "export OPENAI_API_KEY=sk-...",
    "placeholder-gsk": lambda _: "export GROQ_API_KEY=gsk_...",
    "placeholder-elided-json": lambda _: "export ZAI_API_KEY=...\\n```",
    "placeholder-angle": lambda _: "| `--api-key <key>` | API key |",
    "placeholder-env": lambda _: "API_KEY=${API_KEY}",
    "placeholder-dollar": lambda _: "token=$GITHUB_TOKEN",
    "placeholder-template": lambda _: "password: {{ secrets.DB_PASSWORD }}",
    "placeholder-stars": lambda _: "passwd: ********",
    "placeholder-your": lambda _: "api_key: your-api-key-here",
    "placeholder-xxxx": lambda _: "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxx",
    "placeholder-curl": lambda _: 'curl -u "$USER:$PASS" https://example.com',
    "placeholder-sshpass": lambda _: 'sshpass -p "$SSHPASS" ssh host',
    "working-directory": lambda r: f"PWD=/home/{_word(r)}/src",
    "old-working-directory": lambda _: "OLDPWD=/tmp",
    "bypass-flag": lambda _: "bypass=true",
    "compass": lambda _: "compass: north",
    "sort-key": lambda _: "sort_key = created_at",
    "primary-key": lambda _: "PRIMARY_KEY=id",
    "cache-key-words": lambda r: f"CACHE_KEY={_word(r)}-profile-settings-v2",
    "session-key-words": lambda _: "SESSION_KEY=user-session-id",
    "password-min-length": lambda _: "PASSWORD_MIN_LENGTH=12",
    "auth-method": lambda _: "auth_method=oauth2",
    "key-file-path": lambda _: "private_key_path=~/.ssh/id_ed25519",
    "tokens-used": lambda _: "tokens used: 1234, max_tokens: 4096, token_count: 77",
    "password-hash": lambda r: f"password_hash: {_sha(r, 32)}",
    "docker-user": lambda _: "docker run -u 1000:1000 app",
    "mysql-prompt": lambda _: "mysql -u root -p shop",
    "mysql-port": lambda _: "mysql -P 3306 -h db.internal",
    "ssh-port": lambda _: "ssh -p 2222 deploy@host",
    "curl-output": lambda _: "curl -O https://example.com/file.tar.gz",
    "prose-reset": lambda _: "Reset your password in settings.",
    "prose-stored": lambda _: "The password is stored in the vault.",
    "prose-wrong": lambda _: "My password is wrong, I think.",
    "prose-required": lambda _: "Password is required for this step.",
    "prose-same": lambda _: "my password is the same as before",
    "prose-pw-in": lambda _: "The pw is in 1Password.",
    "prose-machine-learning": lambda _: "machine learning login flow password reset",
    "prose-token-expired": lambda _: "The token expired, so I asked for a new token.",
    "prose-bearer": lambda _: "the bearer of bad news",
    "hf-function": lambda _: "from huggingface_hub import hf_hub_download_with_progress",
    "short-vault-word": lambda _: "use hvs.example in docs",
    "telegram-like-time": lambda _: "at 12345678:30 the job ran",
    "version": lambda _: "version 1.2.3-beta.4+build.5678",
    "short-sig": lambda _: "https://example.com/p?id=42&sig=abc",
    "ssh-path": lambda _: "see /home/user/.ssh/id_rsa and ~/.aws/credentials",
    "git-remote": lambda _: "git@github.com:org/repo.git",
    "localhost-url": lambda _: "http://localhost:8080/path@v2",
    "kebab-case": lambda _: "task-runner-configuration-2024-final",
    "k8s-secret-ref": lambda _: "secretName: my-tls-secret",
    "hex-color": lambda r: f"color: #{_sha(r, 6)}",
    "public-cert-prefix": lambda _: "MIIDdzCCAl+gAwIBAgIJAKtest is a certificate, not a key",
}
