"""Redaction: secrets and <private> spans never reach raw/ or a model; ordinary text does."""

import json

import pytest

from compiler.discover import Candidate
from compiler.redact import redact, redact_submitted
from compiler.sources import read_source, source_from_text

# Shaped like the real thing, valid for nobody.
SECRETS = {
    "openai": "sk-proj-4fQx9TzB2mKp7LwR1nVc8YhJ3dGs6AeU0iOq5XbN",
    "openai-legacy": "sk-9aB8cD7eF6gH5iJ4kL3mN2oP1qR0sT9uV8wX7yZ6",
    "anthropic": "sk-ant-api03-Zx8Yw7Vu6Ts5Rq4Po3Nm2Lk1Jh0Gf9Ed8Cb7Aa6-QwErTy",
    "github": "ghp_4fQx9TzB2mKp7LwR1nVc8YhJ3dGs6AeU0iOq",
    "github-fine-grained": "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123",
    "aws-access-key": "AKIAZ7Q4X9T2B6M1P3LW",
    "slack": "xoxb-2048202420-4096409640960-Zx8Yw7Vu6Ts5Rq4Po3Nm2Lk1",
    "google": "AIzaSyD4fQx9TzB2mKp7LwR1nVc8YhJ3dGs6AeU",
    "stripe": "sk_live_4fQx9TzB2mKp7LwR1nVc8YhJ",
    "jwt": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJrYi1haSIsImlhdCI6MTcwMDAwMDAwMH0."
    "Qm9ndXNTaWduYXR1cmVGb3JUZXN0czEyMzQ1Ng",
}


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_each_kind_of_key_is_redacted_wherever_it_appears(kind):
    secret = SECRETS[kind]
    for text in (
        f"the key is {secret} for now",
        f'client = Client("{secret}")',
        f"export KEY={secret}",
        f"`{secret}`",
    ):
        clean, n = redact(text)
        assert secret not in clean, text
        assert "[REDACTED]" in clean and n >= 1


@pytest.mark.parametrize(
    ("text", "kept", "gone"),
    [
        (
            "curl -H 'Authorization: Bearer abc123def456ghi789jkl'",
            "Authorization: Bearer",
            "abc123def456",
        ),
        ("Authorization: Basic dXNlcjpodW50ZXIy", "Authorization: Basic", "dXNlcjpodW50ZXIy"),
        ('password = "correct horse battery"', 'password = "', "correct horse"),
        ("DB_PASSWORD=hunter2", "DB_PASSWORD=", "hunter2"),
        ("api_key: 9f8e7d6c5b4a", "api_key: ", "9f8e7d6c5b4a"),
        ('{"client_secret": "s3cr3t-value"}', '"client_secret": "', "s3cr3t-value"),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLE",
            "aws_secret_access_key",
            "wJalrXUtnFEMI",
        ),
        ("mysql --password=pa55word -u root", "--password=", "pa55word"),
        ('password: str = "hunter2!"', 'password: str = "', "hunter2!"),
        ("API_TOKEN: Final[str] = 'tok-91b2c3d4e5'", "API_TOKEN: Final[str] = '", "tok-91b2c3d4e5"),
        ('const apiKey: string = "k3y-v4lue-123";', "apiKey: string = ", "k3y-v4lue-123"),
    ],
)
def test_secret_assignments_and_headers_keep_their_name_and_lose_their_value(text, kept, gone):
    clean, n = redact(text)
    assert kept in clean
    assert gone not in clean
    assert n == 1


def test_a_password_in_a_url_is_cut_out_and_the_rest_of_the_url_kept():
    clean, n = redact("clone https://deploy:t0ps3cret@git.example.com/team/repo.git today")
    assert clean == "clone https://deploy:[REDACTED]@git.example.com/team/repo.git today"
    assert n == 1
    clean, _ = redact("DATABASE_URL=postgres://app:hunter2@db:5432/app")
    assert "hunter2" not in clean and "postgres://app:[REDACTED]@db:5432/app" in clean


def test_pem_private_keys_go_whole_even_when_unterminated():
    key = (
        "-----BEGIN OPENSSH PRIVATE KEY-----\n"
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
        "-----END OPENSSH PRIVATE KEY-----"
    )
    clean, n = redact(f"my key:\n{key}\nthanks")
    assert clean == "my key:\n[REDACTED]\nthanks" and n == 1
    clean, _ = redact("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn\n")
    assert "MIIEow" not in clean
    # a public certificate is not a secret
    cert = "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIE\n-----END CERTIFICATE-----"
    assert redact(cert) == (cert, 0)


def test_private_spans_go_across_lines_in_any_case_and_unclosed_to_the_end():
    clean, n = redact("keep <private>my home\naddress</private> this <PRIVATE>and</Private> too")
    assert clean == "keep [private] this [private] too" and n == 2
    clean, n = redact("before <private>everything after\nthis line")
    assert clean == "before [private]" and n == 1


def test_redacting_twice_finds_nothing_new():
    text = f"key {SECRETS['openai']} and https://u:pw123456@h/x and password='abc123'"
    once, n = redact(text)
    assert n == 3
    assert redact(once) == (once, 0)


ORDINARY = """\
# Release notes

We moved the DNS records to Terraform; commit 3f2a9c1e5b7d4f6a8c0e2b4d6f8a0c2e4b6d8f0a
did it, and session 069508a5-1193-487c-a9b5-a6f5f3ae4f98 recorded the run.
The sha256 is e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855.
A token is the unit a model reads: each word becomes one or more tokens.
Keep the secret: the password rotation runs on Fridays.
Install scikit-learn and read https://example.com/docs/v2@latest or git@github.com:team/repo.git.

```python
data = base64.b64decode("SGVsbG8gd29ybGQsIHRoaXMgaXMganVzdCBhIHRlc3Q=")
password = getpass.getpass()
api_key = os.environ["OPENAI_API_KEY"]
token = tokenizer.next_token()
if token == "EOF":
    connect(user=user, password=password)
secret_key = settings.SECRET_KEY
api_key: str | None = None
password: str = getpass.getpass()
token: Optional[str] = "EOF"
headers = {"Authorization": f"Bearer {token}"}
```

```yaml
password: ${DB_PASSWORD}
url: postgres://app:${DB_PASSWORD}@db/app
```
"""


def test_ordinary_prose_and_code_are_not_touched():
    assert redact(ORDINARY) == (ORDINARY, 0)


def test_every_source_is_redacted_before_anything_else_sees_it(tmp_path):
    secret = SECRETS["github"]
    note = tmp_path / "setup.md"
    note.write_text(f"# Setup\n\nUse token {secret}.\n<private>my phone: 555</private>\n")
    src = read_source(Candidate(note, str(note)), max_bytes=10_000, chunk_chars=1000)
    assert secret not in src.text and "555" not in src.text
    assert all(secret not in c for c in src.chunks)
    assert src.redactions == 2 and src.kind == "note"

    handed = source_from_text(
        "hook:1", "", "# Hook\n\npassword=Sup3rS3cret\n", chunk_chars=1000, max_bytes=10_000
    )
    assert "Sup3rS3cret" not in handed.text and handed.redactions == 1


AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ4XaMPLEk"  # 40 characters, shaped like one


@pytest.mark.parametrize(
    ("text", "gone"),
    [
        ("db:\n  user: app\n  password: YamlPasszzgEOz\n", "YamlPasszzgEOz"),
        ("password: plainletters\n", "plainletters"),
        ("the admin password: CorrectHorseStaple today", "CorrectHorseStaple"),
        ("curl -u deploy:CurlUserPassword https://ci.example.com/api", "CurlUserPassword"),
        ('curl -s --user "deploy:CurlUserPass" https://ci.example.com', "CurlUserPass"),
        (f"AKIAZ7Q4X9T2B6M1P3LW\n{AWS_SECRET}\n", AWS_SECRET),
        (f"the aws keys are in the note: {AWS_SECRET}", AWS_SECRET),
        ("the password is hunter2letters.", "hunter2letters"),
        ("The password for the db is Tr0ub4dor3, ask Ops.", "Tr0ub4dor3"),
        ("the wifi password was `swordfish` all along", "swordfish"),
    ],
    ids=[
        "yaml-letters-only",
        "yaml-plain-word",
        "mixed-case-mid-line",
        "curl-u",
        "curl-user-quoted",
        "aws-secret-by-key-id",
        "aws-secret-by-mention",
        "prose-is",
        "prose-for-the-db",
        "prose-quoted",
    ],
)
def test_forms_an_outside_test_found_are_redacted(text, gone):
    clean, n = redact(text)
    assert gone not in clean and "[REDACTED]" in clean and n >= 1


NOT_SECRETS = """\
The password is stored in the vault and the password was rotated last week.
A password is at least 12 characters; the secret: keep it short.
docker run -u 1000:1000 app, then curl -u is not needed here.
commit 3f2a9c1e5b7d4f6a8c0e2b4d6f8a0c2e4b6d8f0a fixed the aws region lookup.
The laws of Ireland and the Statute Book: 9b7a6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b.
token: next
password: ${DB_PASSWORD}
password: <your password here>
"""


def test_prose_about_passwords_and_hashes_near_aws_are_left_alone():
    assert redact(NOT_SECRETS) == (NOT_SECRETS, 0)


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_a_key_is_redacted_between_separators_as_in_a_file_name(kind):
    """Issue 24, finding 2: "creds-ghp_....md" kept its token (no match after - or _)."""
    secret = SECRETS[kind]
    for text in (
        f"creds-{secret}.md",
        f"backup_{secret}_old.txt",
        f"keys/{secret}-2",
        f"x.{secret}",
    ):
        clean, n = redact(text)
        assert secret not in clean and n == 1, (text, clean)


@pytest.mark.parametrize(
    ("text", "kept", "gone"),
    [
        ("https://intranet.example.com/login?user=ops&pass=Tr4mpoline", "&pass=", "Tr4mpoline"),
        ("https://example.com/a?pass=plainword", "?pass=", "plainword"),
        ("then use bearer tok_9f8e7d6c5b4a3210 for the API", "use bearer ", "9f8e7d6c5b4a"),
        ("send it a Bearer token: z9y8x7w6v5u4t3s2", "Bearer token: ", "z9y8x7w6v5u4"),
        ("machine ftp.example.com login deploy password s3cretPass", "password ", "s3cretPass"),
        (
            "machine ftp.example.com\n  login deploy\n  password plainword\n",
            "login deploy",
            "plainword",
        ),
        (
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Zm9vYmFy+/MTIz==;"
            "EndpointSuffix=core.windows.net",
            "AccountKey=",
            "Zm9vYmFy",
        ),
        (
            "Endpoint=sb://x.servicebus.windows.net/;SharedAccessKey=Ab12+Cd34=",
            "SharedAccessKey",
            "Ab12",
        ),
        (
            "SECRET_KEY = 'django-insecure-8f#k2l!x9z@q1w3e5r7t'",
            "SECRET_KEY = '",
            "django-insecure",
        ),
        ("SECRET_KEY_BASE=9a8b7c6d5e4f3a2b1c0d", "SECRET_KEY_BASE=", "9a8b7c6d5e4f"),
        ("DB_PASS=hunter", "DB_PASS=", "hunter"),
        ("smtp.pass: Xk29dLw0", "smtp.pass: ", "Xk29dLw0"),
    ],
    ids=[
        "url-pass",
        "url-pass-plain",
        "bearer-prose",
        "bearer-token-colon",
        "netrc-one-line",
        "netrc-lines",
        "azure-account-key",
        "azure-shared-access-key",
        "django-secret-key",
        "rails-secret-key-base",
        "db-pass",
        "dotted-pass",
    ],
)
def test_forms_the_second_outside_test_found_are_redacted(text, kept, gone):
    clean, n = redact(text)
    assert kept in clean and gone not in clean and n == 1, clean


def test_an_aws_secret_goes_however_far_from_its_key_id():
    text = (
        f"key id AKIAZ7Q4X9T2B6M1P3LW\n\n{'The robot copies dumps nightly. ' * 20}\n{AWS_SECRET}\n"
    )
    clean, n = redact(text)
    assert AWS_SECRET not in clean and n == 2


NOT_SECRETS_EITHER = """\
The bearer of this letter may pass. We bypass the cache: compass: north.
first_pass = 3 and pass: on
The machine room has no password policy yet.
ShadowPass = "render"
"""


def test_words_near_the_new_forms_are_left_alone():
    assert redact(NOT_SECRETS_EITHER) == (NOT_SECRETS_EITHER, 0)


def test_a_kept_submission_stays_json_and_a_note_that_starts_with_a_bracket_is_text():
    secret = SECRETS["github"]
    line = json.dumps({"message": {"content": f"key {secret}\npassword: plainword"}})
    kept, n = redact_submitted(f"{line}\n{line}\n")
    assert [json.loads(x)["message"]["content"] for x in kept.splitlines()] == [
        "key [REDACTED]\npassword: [REDACTED]"
    ] * 2
    assert n == 4
    note = f"[Home](index.md) | the key is {secret}\n"
    assert redact_submitted(note) == (note.replace(secret, "[REDACTED]"), 1)


SECRET_NAMES = [
    "password", "passwd", "passphrase", "pwd", "DB_PASS", "smtp.pass", "secret",
    "api_key", "api-key", "apikey", "access_key", "private_key", "auth_token",
    "access_token", "refresh_token", "client_secret", "secret_key", "secret_key_base",
    "account_key", "shared_access_key", "token", "credential", "credentials", "MY_APP_TOKEN",
]  # fmt: skip


@pytest.mark.parametrize("name", SECRET_NAMES)
@pytest.mark.parametrize("form", ['{} = "{}"', "{}: str = '{}'", "{}={}", '"{}": "{}"', "{}: {}"])
def test_every_secret_name_is_redacted_in_every_assignment_form(name, form):
    """Each name the assignment patterns know, in each form they take (quoted, annotated,
    bare, JSON, YAML), in a note with prose around it: a quick pre-check decides whether
    those patterns run at all, and it must let every one of these through."""
    value = "Zq8vXw3pLm2Rt7"
    text = "The service reads its settings at start.\n" + form.format(name, value) + "\nDone.\n"
    out, count = redact(text)
    assert value not in out and count == 1, out
    assert name in out  # the name stays: a reader sees what was there
