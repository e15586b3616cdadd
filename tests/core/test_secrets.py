"""The one secrets policy (core/secrets.py): what a credential looks like, in every form a
command line, an environment, a URL or a free text carries it, and how it is shown: the token
replaced by ***, the rest of the line as it was."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from fontaine_tui.core.secrets import (
    env_secret,
    mask_argv,
    mask_lines,
    mask_text,
    mask_tree,
    recordable,
    secret_name,
    tree_secrets,
)

HF = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345"
SK = "sk-proj-AbCdEfGhIjKlMnOp0123"
HEX = "0123456789abcdef0123456789abcdef01234567"  # a W&B API key's shape, or a git commit's
SHA256 = "ab" * 32

# (argv, as shown): each form a credential takes on a command line
ARGV_FORMS = [
    (["train.py", "--api-key", "k3y"], ["train.py", "--api-key", "***"]),
    (["train.py", "--hf_token", "x", "--lr", "3"], ["train.py", "--hf_token", "***", "--lr", "3"]),
    (["train.py", "--token=k3y"], ["train.py", "--token=***"]),
    (["train.py", "--wandb-key=k3y"], ["train.py", "--wandb-key=***"]),
    (["--credentials", "c", "--epochs", "3"], ["--credentials", "***", "--epochs", "3"]),
    (["--key", "k", "--lr", "3"], ["--key", "***", "--lr", "3"]),
    (["env", "HF_TOKEN=k3y", "python", "t.py"], ["env", "HF_TOKEN=***", "python", "t.py"]),
    (["env", "WANDB_API_KEY=k3y", "DB_PWD=pw"], ["env", "WANDB_API_KEY=***", "DB_PWD=***"]),
    (
        ["bash", "-c", "WANDB_API_KEY=k3y python t.py --lr 3"],
        ["bash", "-c", "WANDB_API_KEY=*** python t.py --lr 3"],
    ),
    (
        ["bash", "-c", "export HF_TOKEN='a b c'; python t.py --token k3y"],
        ["bash", "-c", "export HF_TOKEN='***'; python t.py --token ***"],
    ),
    (["sh", "-c", f"python t.py {HF}"], ["sh", "-c", "python t.py ***"]),
    (
        ["python", "t.py", "trainer.logger.wandb.api_key=k3y", "model.lr=3e-4"],
        ["python", "t.py", "trainer.logger.wandb.api_key=***", "model.lr=3e-4"],
    ),
    (["python", "t.py", "+hub.token=k3y"], ["python", "t.py", "+hub.token=***"]),
    (["python", "t.py", "++db.password=pw"], ["python", "t.py", "++db.password=***"]),
    (["wandb", "login", HEX], ["wandb", "login", "***"]),
    (["python", "t.py", HF], ["python", "t.py", "***"]),
    (["python", "t.py", f"--hub={HF}"], ["python", "t.py", "--hub=***"]),
    (["python", "t.py", SK], ["python", "t.py", "***"]),
    (["--header", f"x-auth:{HF}"], ["--header", "x-auth:***"]),
    (["--db=postgres://me:pw@db/x"], ["--db=postgres://me:***@db/x"]),
    (["git", "clone", f"https://{HF}@hf.co/x"], ["git", "clone", "https://***@hf.co/x"]),
    (["https://x.org/data?token=k3y&lang=en"], ["https://x.org/data?token=***&lang=en"]),
    (["https://maps.x.org/api?key=k3y&q=1"], ["https://maps.x.org/api?key=***&q=1"]),
    (["https://x.org/data?sig=abc"], ["https://x.org/data?sig=***"]),
    (
        ["--to", "https://discord.com/api/webhooks/123/TOKEN"],
        ["--to", "https://discord.com/api/webhooks/123/***"],
    ),
    (
        ["--notify", "https://hooks.slack.com/services/T0/B0/XSECRET"],
        ["--notify", "https://hooks.slack.com/services/***/***/***"],
    ),
    (
        ["curl", "https://chat.example.org/hooks/SECRETKEY"],
        ["curl", "https://chat.example.org/***/***"],
    ),
    (["mysql", "-u", "me", "-p", "pw"], ["mysql", "-u", "me", "-p", "***"]),
    (["mysql", "-ppw", "db"], ["mysql", "-p***", "db"]),
    (["--key", "", "", "k_x"], ["--key", "", "", "***"]),  # a split line's runs of spaces
]

# what is left as it is: nothing but the credential is mangled
ARGV_KEPT = [
    ["python", "t.py", "--max_new_tokens", "100", "--pad_token_id", "0"],
    ["python", "t.py", "--tokenizer_name", "gpt2", "--author", "me"],
    ["python", "t.py", "--revision", HEX, f"--commit={HEX}"],
    ["python", "t.py", "--model", f"/cache/models--gpt2/snapshots/{HEX}/"],
    ["python", "t.py", "--use_auth_token", "true", "--output_dir", "x"],
    ["python", "t.py", "--use_auth_token", "--output_dir", "x"],
    ["python", "t.py", "https://huggingface.co/gpt2", "--source", "hf_trainer"],
    ["mkdir", "-p", "/tmp/x"],
    ["python", "t.py", "--text_key", "text", "--image_key", "img", "--sort_key", "step"],
    ["python", "t.py", f"--sha256={SHA256}", "--run=my_secret_run"],
    ["python", "t.py", "data.max_tokens=100", "model.tokenizer.name=gpt2"],
    ["torchrun", "--nproc_per_node=8", "--rdzv_endpoint=host:29500", "t.py"],
    ["python", "t.py", "--lr", "3e-4", "--task-classification-long-name"],
]


@pytest.mark.parametrize(("argv", "shown"), ARGV_FORMS, ids=[" ".join(a) for a, _ in ARGV_FORMS])
def test_each_argv_form_shows_its_token_masked(argv, shown):
    assert mask_argv(argv) == shown


@pytest.mark.parametrize("argv", ARGV_KEPT, ids=[" ".join(a) for a in ARGV_KEPT])
def test_an_argv_without_a_credential_is_left_as_it_is(argv):
    assert mask_argv(argv) == argv


@pytest.mark.parametrize(("argv", "shown"), ARGV_FORMS, ids=[" ".join(a) for a, _ in ARGV_FORMS])
def test_a_command_line_as_one_text_is_masked_as_its_argv(argv, shown):
    if any(" " in a for a in argv) or "" in argv:
        pytest.skip("an element with spaces is quoted on a line")
    assert mask_text(" ".join(argv)) == " ".join(shown)


def test_masking_twice_changes_nothing_more():
    for argv, shown in ARGV_FORMS:
        assert mask_argv(shown) == shown, argv


# (text, as shown): a free text (a stack line, a trainer's alert, an error) keeps its words
TEXTS = [
    (
        "Process 12: python t.py --hf_token hf_x --lr 3",
        "Process 12: python t.py --hf_token *** --lr 3",
    ),
    ('post failed: {"api_key": "k3y", "step": 3}', 'post failed: {"api_key": "***", "step": 3}'),
    ("Authorization: Bearer abc.def.ghi", "Authorization: Bearer ***"),
    ("sent with Bearer abcdefghijk", "sent with Bearer ***"),
    (f"key {HEX} refused", "key *** refused"),
    (f"launched with git commit {HEX}", f"launched with git commit {HEX}"),
    (f"prereg.json sha256 {SHA256}", f"prereg.json sha256 {SHA256}"),
    (f"a 401 for {HF}\nretry", "a 401 for ***\nretry"),
    ("loss rose at step 30: 2.4 > 2.1", "loss rose at step 30: 2.4 > 2.1"),
    ("export HF_TOKEN=k3y", "export HF_TOKEN=***"),
    ("api_key = 'k3y'", "api_key = '***'"),
    ("see https://u:pw@example.org/x?a=1", "see https://u:***@example.org/x?a=1"),
]


@pytest.mark.parametrize(("text", "shown"), TEXTS)
def test_a_free_text_shows_the_token_masked_and_keeps_the_rest(text, shown):
    assert mask_text(text) == shown


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("HF_TOKEN", True),
        ("HFTOKEN", True),
        ("hub-token", True),
        ("WANDB_API_KEY", True),
        ("apiKey", True),
        ("OPENAI_KEY", True),
        ("DB_PASSWORD", True),
        ("DB_PWD", True),
        ("GH_PAT", True),
        ("SENTRY_DSN", True),
        ("DATABASE_URL", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("SLACK_WEBHOOK", True),
        ("AUTHORIZATION", True),
        ("TOKENIZERS_PARALLELISM", False),
        ("PWD", False),
        ("AUTHOR", False),
        ("MAX_TOKENS", False),
        ("PAD_TOKEN_ID", False),
        ("TEXT_KEY", False),
        ("CUDA_VISIBLE_DEVICES", False),
    ],
)
def test_a_secret_name(name, secret):
    assert secret_name(name) is secret


@pytest.mark.parametrize(
    ("name", "value", "secret"),
    [
        ("HF_TOKEN", "x", True),  # a secret-named variable, whatever it holds
        ("MY_VAR", HF, True),  # a value that looks like a token, whatever its name
        ("MY_VAR", SK, True),
        ("MY_VAR", HEX, True),
        ("MIRROR", "https://me:pw@mirror.example.org/simple", True),
        ("FEED", "https://x.org/feed?token=abc", True),
        ("TOKENIZERS_PARALLELISM", "false", False),
        ("HF_HOME", "/data/hf", False),
        ("GIT_COMMIT", HEX, False),
        ("MIRROR", "https://mirror.example.org/simple", False),
    ],
)
def test_an_environment_variable(name, value, secret):
    assert env_secret(name, value) is secret


def test_a_document_tree_names_each_secret_and_masks_only_it():
    doc = {
        "run": {"name": "x", "question": f"with {HF} inside"},
        "command": {"argv": ["python", "t.py", "--token", "abc"], "env": {"A": "1"}},
        "code": {"git_commit": HEX, "diff_sha256": SHA256},
        "api_key": "abc",
        "n": 3,
    }
    assert tree_secrets(doc) == ["run.question", "command.argv[3]", "api_key"]
    assert mask_tree(doc) == {
        "run": {"name": "x", "question": "with *** inside"},
        "command": {"argv": ["python", "t.py", "--token", "***"], "env": {"A": "1"}},
        "code": {"git_commit": HEX, "diff_sha256": SHA256},
        "api_key": "***",
        "n": 3,
    }


def test_quotes_nested_deep_are_read_without_running_out_of_stack():
    deep = '"' * 20000 + f"--token k3y {HF}"
    shown = mask_text(deep)  # no RecursionError: quotes past a few levels are read as text
    assert HF[3:] not in shown and shown.startswith('"' * 20000)
    assert mask_text("bash -c \"sh -c 'env HF_TOKEN=k3y python t.py'\"") == (
        "bash -c \"sh -c 'env HF_TOKEN=*** python t.py'\""
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["python", "train.py", "-p", "0.5"],  # a program's own -p: a probability
        ["python", "serve.py", "-p", "8080"],  # a port
        ["python", "train.py", "-p", "./out"],  # a path
        ["bash", "-c", "python t.py --hf_token $HF_TOKEN"],  # the secret stays in the env
        ["python", "t.py", "--hf_token", "${HF_TOKEN}"],
        ["python", "t.py", "--token_file", "token.txt", "--api-key-file", "/run/secrets/key"],
    ],
)
def test_what_only_points_at_a_secret_is_shown_and_refused_nowhere(argv: list[str]) -> None:
    """A number or path after a short -p, a reference to the environment, a flag naming where
    the secret is kept: none is a credential, so [command] can hold them."""
    assert mask_argv(argv) == argv


# a flag's value that is a comma-separated list of key=value pairs (--opts a=1,password=x)
PAIR_LISTS = [
    (["train.py", "--opts", "user=bob,password=s3cret"], "user=bob,password=***"),
    (
        ["train.py", "--opts=user=bob,password=s3cret,host=db"],
        "--opts=user=bob,password=***,host=db",
    ),
    (["train.py", "--db", "host=db,api_key='k 3',port=5"], "host=db,api_key='***',port=5"),
    (["train.py", "--opts", "a,b,token=k3y"], "a,b,token=***"),
    (["train.py", "--opts", "user=bob,password=$DB_PASSWORD"], "user=bob,password=$DB_PASSWORD"),
    (["train.py", "--opts", "lr=3,use_auth_token=true"], "lr=3,use_auth_token=true"),
]


@pytest.mark.parametrize(("argv", "shown"), PAIR_LISTS, ids=[a[-1] for a, _ in PAIR_LISTS])
def test_a_secret_in_a_list_of_pairs_is_masked_and_its_neighbours_kept(argv, shown):
    assert mask_argv(argv)[-1] == shown
    assert mask_text(" ".join(argv)) == " ".join([*argv[:-1], shown])
    assert mask_argv(mask_argv(argv)) == mask_argv(argv)


# a backslash-newline is the shell's space: the value on the next line is still the flag's
CONTINUED = [
    (
        "python train.py --hub_token \\\n    abc123s3cret --lr 3",
        "python train.py --hub_token \\\n    *** --lr 3",
    ),
    (f"train.py --hub_token \\\n{HF}", "train.py --hub_token \\\n***"),
    ("export HF_TOKEN=abc \\\n  WANDB_API_KEY=def", "export HF_TOKEN=*** \\\n  WANDB_API_KEY=***"),
    ("mysql -u me -p \\\n  pw db", "mysql -u me -p \\\n  *** db"),
]


@pytest.mark.parametrize(("text", "shown"), CONTINUED)
def test_a_value_after_a_line_continuation_is_masked_and_the_rest_kept(text, shown):
    assert mask_text(text) == shown
    assert mask_argv(["bash", "-c", text]) == ["bash", "-c", shown]  # one argv element
    assert mask_lines(text.split("\n")) == shown.split("\n")  # a launcher's lines


def test_a_quoted_value_across_a_continuation_keeps_its_lines():
    text = 'run --password "a b \\\nc d" --lr 3\nnext line'
    assert mask_text(text) == 'run --password "*** \\\n***" --lr 3\nnext line'


# a quote that never closes is a reader's apostrophe or a stray mark, not a quoted run: the
# words after it are masked as they would be without it, and the quote is kept where it stands
UNCLOSED = [
    ("couldn't push: --hub_token abc123secret", "couldn't push: --hub_token ***"),
    ("don't share password=hunter2 with anyone", "don't share password=*** with anyone"),
    ('the error said "password=hunter2 was refused', 'the error said "password=*** was refused'),
    ('he typed "--api-key k3yvalue', 'he typed "--api-key ***'),
    ("sent 'Authorization: Bearer tok3nvalue", "sent 'Authorization: Bearer ***"),
    (f"can't reach the hub with {HF}", "can't reach the hub with ***"),
    ("won't push \\\n  --hub_token abc123secret", "won't push \\\n  --hub_token ***"),
    ('a closed "--token k3y" then it\'s --key k3y2', 'a closed "--token ***" then it\'s --key ***'),
    ('bash -c "it\'s --token k3y"', 'bash -c "it\'s --token ***"'),  # inside a closed run
]


@pytest.mark.parametrize(("text", "shown"), UNCLOSED)
def test_a_quote_that_never_closes_hides_nothing_after_it(text, shown):
    assert mask_text(text) == shown
    assert mask_text(shown) == shown  # idempotent
    assert mask_argv(["bash", "-c", text]) == ["bash", "-c", shown]  # one argv element


def test_a_quote_that_closes_is_still_one_word():
    """A quoted run that closes keeps working as before: its value hidden whole, quotes kept."""
    assert mask_text("run --password 'a b c' --lr 3") == "run --password '***' --lr 3"
    assert mask_text('run "password=hunter2" next') == 'run "password=***" next'
    assert mask_text("echo 'it is --token k3y'") == "echo 'it is --token ***'"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("tokenizer(x=1, y=2) failed", "tokenizer(x=1, y=2) failed"),
        ("get_token(a=1, b=2) then --token k3y", "get_token(a=1, b=2) then --token ***"),
        (f"login(use_auth=True, {HF})", "login(use_auth=True, ***)"),
    ],
)
def test_a_word_with_commas_and_equals_but_no_pair_list_is_masked_as_any(text, shown):
    """`f(x=1, ...` holds `=` and `,` but no `k=v` pair where a list's would stand: it is read
    as any other word, and the line masked, not a failure."""
    assert mask_text(text) == shown


# two apostrophes of prose pair up into a quoted run as the shell reads them ("don't ... it's"):
# the text is also read as prose reads it, every quote a character, and a token either reading
# finds is masked; JSON and a Python dict's repr carry a secret-named key's value after `": "`
# or `': '`, spaced or not, its quotes in any reading
BOTH_READINGS = [
    ("# don't share password=hunter2, it's prod", "# don't share password=***, it's prod"),
    ("it's --token k3yvalue, don't", "it's --token ***, don't"),
    ("can't log in: Authorization: Bearer tok3nvalue, it's down", None),
    (f"won't push {HF}, it's {SK}", "won't push ***, it's ***"),
    ('api_key": k3yvalue', 'api_key": ***'),
    ("token': k3yvalue", "token': ***"),
    (f'{{"hub_token": "{HF}"}}', '{"hub_token": "***"}'),
    ('{"hub_token": "hf_short"}', '{"hub_token": "***"}'),
    ("{'password': 'x', 'lr': 0.1}", "{'password': '***', 'lr': 0.1}"),
    ('{"api_key":"k3y","step":3}', '{"api_key":"***","step":3}'),
    ("{'password':'x','lr':0.1}", "{'password':'***','lr':0.1}"),
    ('{"db_password": 12345678}', '{"db_password": ***}'),
    ("it's {'password': 'a b c'}, don't", "it's {'password': '***'}, don't"),
    ('couldn\'t post {"api_key": "k3y v4l"}, it\'s down', None),
    ('don\'t {"api_key":"k3y"} it\'s', 'don\'t {"api_key":"***"} it\'s'),
    ('{"use_auth_token": true, "max_tokens": 5, "text_key": "text"}', None),
]


@pytest.mark.parametrize(("text", "shown"), BOTH_READINGS)
def test_a_token_either_reading_finds_is_masked_and_the_rest_kept(text, shown):
    if shown is None:  # the one secret in it: its value, quotes kept
        shown = {
            BOTH_READINGS[2][0]: "can't log in: Authorization: Bearer ***, it's down",
            BOTH_READINGS[13][0]: 'couldn\'t post {"api_key": "***"}, it\'s down',
            BOTH_READINGS[15][0]: BOTH_READINGS[15][0],  # none: a flag, counts, a data key
        }[text]
    assert mask_text(text) == shown
    assert mask_text(shown) == shown  # masking twice changes nothing
    assert mask_argv(["echo", text]) == ["echo", shown]  # one argv element, read alone


def test_closed_quotes_of_a_command_line_still_group_its_words():
    """The shell's reading stays: a quoted value is hidden whole, quotes and the rest kept."""
    line = 'env HF_TOKEN=\'a b\' bash -c "WANDB_API_KEY=k3y python t.py" --token "c d" --lr 3'
    shown = 'env HF_TOKEN=\'***\' bash -c "WANDB_API_KEY=*** python t.py" --token "***" --lr 3'
    assert mask_text(line) == shown
    assert mask_text(shown) == shown


# the shapes a config takes when a trainer prints it, and a value with an apostrophe in it:
# the shell pairs `'don'` and leaves `t V'` outside the quotes, prose pairs `'don't V'`
AROUND_THEM = [
    ('{"cfg": {"api_key": "n3sted"}, "lr": 3}', '{"cfg": {"api_key": "***"}, "lr": 3}'),
    ('{"api_key":"a\\"b3sc"}', '{"api_key":"***"}'),
    ('"api_key":"a\\"b3sc"', '"api_key":"***"'),
    ('it\'s {"api_key": "a\\" b3sc"} don\'t', 'it\'s {"api_key": "***"} don\'t'),
    ("{'api_key': 'xyz'}", "{'api_key': '***'}"),
    ("password='don't s3c'", "password='***'"),
    ("--token 'it's s3c' --lr 3", "--token '***' --lr 3"),
    ("{'api_key': 'it's s3c'}", "{'api_key': '***'}"),
    ("it's --token 'x y z' don't", "it's --token '***' don't"),
    ("won't: password='a b c', it's", "won't: password='***', it's"),
    ("Authorization: Bearer 'it's s3c'", "Authorization: Bearer '***'"),
    ('{"auth": ["u", "p4ss"]}', '{"auth": [***]}'),
    ("Namespace(api_key='s3c', lr=3)", "Namespace(api_key='***', lr=3)"),
    (
        "TrainingArguments(hub_token='s3c v', push=True)",
        "TrainingArguments(hub_token='***', push=True)",
    ),
    ('dict(password="s3c")', 'dict(password="***")'),
    ('{"use_auth_token": [""], "x": 1}', None),
    ("Namespace(use_auth_token=True, text_key='it's')", None),
    ("it's 'fine', don't worry: the key 'text' isn't set", None),
]


@pytest.mark.parametrize(("text", "shown"), AROUND_THEM)
def test_a_printed_config_or_an_apostrophe_in_a_value_hides_no_token(text, shown):
    shown = text if shown is None else shown  # None: nothing in it grants access
    assert mask_text(text) == shown
    assert mask_text(shown) == shown
    assert mask_argv(["echo", text]) == ["echo", shown]
    assert mask_argv([text]) == [shown]  # an argv's first element, read alone


def test_every_value_is_masked_in_every_shape_around_it():
    """Each value (one with a space, an apostrophe, an escaped quote) under each secret's
    shape, bare or quoted, inside prose with apostrophes before and after: no character of
    the value is shown, and masking the shown text again changes nothing."""
    values = ["Zq9secZ", "Zq9 secZ", "it's Zq9secZ", 'Zq9\\"secZ']
    shapes = [
        "--token {q}{v}{q}",
        "password={q}{v}{q}",
        '{{"api_key": {q}{v}{q}}}',
        "{{'api_key': {q}{v}{q}}}",
        '{{"api_key":{q}{v}{q}}}',
        "Namespace(hub_token={q}{v}{q}, lr=3)",
        "Authorization: Bearer {q}{v}{q}",
        "api_key = {q}{v}{q}",
        "env HF_TOKEN={q}{v}{q} python t.py",
    ]
    before = ["", "won't push ", "it's ", "# don't share ", "can't: "]
    after = ["", ", it's read-only", " don't", " --lr 3", "; cfg ok"]
    leaks = []
    for shape in shapes:
        for v in values:
            for q in ("", "'", '"'):
                if (q == "" and (" " in v or "\\" in v)) or (q == "'" and "\\" in v):
                    continue  # no such value written so
                for a in before:
                    for b in after:
                        text = a + shape.format(q=q, v=v) + b
                        shown = mask_text(text)
                        argv = mask_argv(["echo", text])[1]
                        if "Zq9" in shown + argv or "secZ" in shown + argv:
                            leaks.append(f"{text!r} -> {shown!r} / {argv!r}")
                        elif mask_text(shown) != shown:
                            leaks.append(f"{text!r} -> {shown!r}, then {mask_text(shown)!r}")
    assert not leaks, "\n".join(leaks[:20])


def test_a_long_line_of_quotes_that_never_close_is_read_once_over():
    """A quote that opens no run is passed by at the next quote, not at the line's end: a
    line of thousands of them is masked in a moment, not in the square of its length."""
    line = "it's --token k3y " + " 'a" * 5000 + ' "b\\' * 5000
    start = time.monotonic()
    shown = mask_text(line)
    assert time.monotonic() - start < 3, "read once for each quote"
    assert shown.startswith("it's --token *** ") and "k3y" not in shown


# shapes a hostile review found shown whole: a printed argv, a flag and its value a line
# apart, JSON inside a JSON string, programs' own password options, connection strings,
# registry and proxy credentials, private keys, W&B's local keys, .netrc, a `*_PASS` variable
WB = f"local-{HEX}"
PEM_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nZq9secZbase64body=="
HOSTILE_SHAPES = [
    ('argv ["--hub_token", "Zq9secZ"]', 'argv ["--hub_token", "***"]'),
    ("['--hub_token', 'Zq9secZ']", "['--hub_token', '***']"),
    (
        "['t.py', '--hub_token', 'Zq9secZ', '--lr', '3']",
        "['t.py', '--hub_token', '***', '--lr', '3']",
    ),
    ("--hub_token\nZq9secZ\n--lr\n3", "--hub_token\n***\n--lr\n3"),
    ('"--hub_token",\n"Zq9secZ",', '"--hub_token",\n"***",'),
    ('cfg {\\"api_key\\": \\"Zq9secZ\\"}', 'cfg {\\"api_key\\": \\"***\\"}'),
    ('{\\"api_key\\":\\"Zq9secZ\\",\\"lr\\":3}', '{\\"api_key\\":\\"***\\",\\"lr\\":3}'),
    ("mysql -uroot -pZq9secZ db", "mysql -uroot -p*** db"),
    ("docker login -u me -p Zq9secZ", "docker login -u me -p ***"),
    ("docker login -u me -pZq9secZ ghcr.io", "docker login -u me -p*** ghcr.io"),
    ("curl -u admin:Zq9secZ https://x.org/a", "curl -u admin:*** https://x.org/a"),
    ("curl --user admin:Zq9secZ x.org", "curl --user admin:*** x.org"),
    ("curl --user=admin:Zq9secZ x.org", "curl --user=admin:*** x.org"),
    ("run --password:Zq9secZ --lr 3", "run --password:*** --lr 3"),
    (
        "AZ=DefaultEndpointsProtocol=https;AccountName=acc;AccountKey=Zq9secZ==;"
        "EndpointSuffix=core.windows.net",
        "AZ=DefaultEndpointsProtocol=https;AccountName=acc;AccountKey=***;"
        "EndpointSuffix=core.windows.net",
    ),
    ("//registry.npmjs.org/:_authToken=Zq9secZ", "//registry.npmjs.org/:_authToken=***"),
    ("proxy user:Zq9secZ@proxy:8080 refused", "proxy user:***@proxy:8080 refused"),
    ("https_proxy=user:Zq9secZ@proxy.corp.org", "https_proxy=user:***@proxy.corp.org"),
    (
        f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----\nnext",
        "-----BEGIN RSA PRIVATE KEY-----\n***\n-----END RSA PRIVATE KEY-----\nnext",
    ),
    (
        "key: -----BEGIN OPENSSH PRIVATE KEY----- b3Zq9secZ -----END OPENSSH PRIVATE KEY----- ok",
        "key: -----BEGIN OPENSSH PRIVATE KEY----- *** -----END OPENSSH PRIVATE KEY----- ok",
    ),
    ("cut: -----BEGIN PRIVATE KEY-----\nMIIZq9secZ", "cut: -----BEGIN PRIVATE KEY-----\n***"),
    (f"wandb login {WB} ok", "wandb login *** ok"),
    (f"WANDB_KEY_IS {HEX}.Retry later", "WANDB_KEY_IS ***.Retry later"),
    ("machine api.x.org login me password Zq9secZ", "machine api.x.org login me password ***"),
    ("env DB_PASS=Zq9secZ python t.py", "env DB_PASS=*** python t.py"),
]


@pytest.mark.parametrize(("text", "shown"), HOSTILE_SHAPES)
def test_each_shape_the_review_found_is_masked_and_the_rest_kept(text, shown):
    assert mask_text(text) == shown
    assert mask_text(shown) == shown  # masking twice changes nothing
    assert "Zq9secZ" not in mask_argv(["bash", "-c", text])[2]  # one argv element
    assert "Zq9secZ" not in str(mask_tree({"kind": "alert", "text": text}))  # a log record


def test_a_printed_argv_in_a_preset_command_is_masked_as_an_argv():
    argv = ["python", "t.py", "--password:Zq9secZ", "DB_PASS=Zq9secZ", f"--x={WB}"]
    assert mask_argv(argv) == ["python", "t.py", "--password:***", "DB_PASS=***", "--x=***"]
    assert tree_secrets({"command": {"env": {"DB_PASS": "Zq9secZ"}}}) == ["command.env.DB_PASS"]


# -p is a password only where the program takes one there (mysql, sshpass, docker login);
# ssh's port, docker run's ports, a path, a hash named as a file, an image's digest are kept
NOT_HOSTILE = [
    "ssh -p 2222 me@host.org",
    "docker run -p 8080:80 img",
    "docker run -u 1000:1000 img",
    "python -u train.py --user me:group",
    f"blobs named {HEX}.json and {HEX}.lock",
    "image python:3.11@sha256:abc123 pulled",
    "git@github.com:org/repo.git",
    "mail me@example.org at 10:30",
    "loss rose at step 30: 2.4 > 2.1",
    "--pass-through 3 --bypass 1 PASS_COUNT=2",
    "-----BEGIN PUBLIC KEY-----\nMIIBIjANBg\n-----END PUBLIC KEY-----",
]


@pytest.mark.parametrize("text", NOT_HOSTILE)
def test_what_only_looks_near_such_a_shape_is_kept(text):
    assert mask_text(text) == text


@pytest.mark.parametrize(("name", "secret"), [("DB_PASS", True), ("PASS", True), ("BYPASS", False)])
def test_pass_as_a_word_of_a_name_is_a_secret(name, secret):
    assert secret_name(name) is secret


def test_a_preset_error_that_quotes_a_value_shows_it_masked(tmp_path):
    """`presets show` and the listing's INVALID line say what was found: its credential masked."""
    preset = (
        '[run]\nname = "own"\noutput_dir = "runs/own"\nquestion = "q"\n\n'
        '[source]\nkind = "hf_trainer --hub_token Zq9secZ"\n'
    )
    (tmp_path / "presets").mkdir()
    (tmp_path / "presets" / "own.toml").write_text(preset)
    run = [sys.executable, "-m", "fontaine_tui", "presets"]
    shown = subprocess.run(
        [*run, "show", "presets/own.toml"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    listed = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert shown.returncode == 2, shown.stderr
    assert "source.kind" in shown.stderr and "--hub_token ***" in shown.stderr, shown.stderr
    assert "INVALID" in listed.stdout and "--hub_token ***" in listed.stdout, listed.stdout
    assert "Zq9secZ" not in shown.stdout + shown.stderr + listed.stdout + listed.stderr


# a .netrc's entries as the file writes them: a token a line, `default` entries, and the
# `account` token (a second password); the entry is read across lines, wherever it starts
NETRC = [
    (
        "machine api.x.org\n  login me\n  password Zq9secZ",
        "machine api.x.org\n  login me\n  password ***",
    ),
    (
        "machine api.x.org login me\npassword Zq9secZ\n",
        "machine api.x.org login me\npassword ***\n",
    ),
    ("default\n  login me\n  password Zq9secZ", "default\n  login me\n  password ***"),
    ("default login anonymous password Zq9secZ", "default login anonymous password ***"),
    (
        "machine h.org login me account Zq9accZ password Zq9secZ",
        "machine h.org login me account *** password ***",
    ),
    (
        "machine h.org\n\tlogin me\n\taccount Zq9accZ\n\tpassword Zq9secZ\n"
        "machine g.org login you password Zq9secZ2\ndefault login x password Zq9secZ3",
        "machine h.org\n\tlogin me\n\taccount ***\n\tpassword ***\n"
        "machine g.org login you password ***\ndefault login x password ***",
    ),
    (
        "ftp refused, ~/.netrc reads:\nmachine ftp.x.org\n    login me\n    password Zq9secZ\n\n"
        "then 530 login incorrect",
        "ftp refused, ~/.netrc reads:\nmachine ftp.x.org\n    login me\n    password ***\n\n"
        "then 530 login incorrect",
    ),
    (
        "cat ~/.netrc: machine h.org login me password Zq9secZ",
        "cat ~/.netrc: machine h.org login me password ***",
    ),
    ('machine h.org login me password "Zq9 secZ"', 'machine h.org login me password "***"'),
]
# prose that only has a netrc keyword's words: nothing in it is a password
NETRC_KEPT = [
    "machine learning account settings were reset",
    "the default login page is /login\nits password field is empty",
    "machine gpu-7 is down\nlogin from node 3 failed",
]


@pytest.mark.parametrize(("text", "shown"), NETRC)
def test_a_netrc_entry_across_lines_shows_its_passwords_masked(text, shown):
    assert mask_text(text) == shown
    assert mask_text(shown) == shown
    assert "Zq9" not in str(mask_tree({"kind": "alert", "text": text}))
    assert "Zq9" not in mask_argv(["printf", text])[1]  # one argv element


@pytest.mark.parametrize("text", NETRC_KEPT)
def test_prose_with_netrc_words_is_kept(text):
    assert mask_text(text) == text


# -p's password a word a line (an argv printed so) or the next element of a printed list,
# decided with its program in view: mysql, sshpass, docker login take one there
P_NEXT = [
    ("mysql\n-u\nme\n-p\nZq9secZ\ndb", "mysql\n-u\nme\n-p\n***\ndb"),
    ("mysql -u me -p\nZq9secZ", "mysql -u me -p\n***"),
    ("['mysql', '-u', 'me', '-p', 'Zq9secZ', 'db']", "['mysql', '-u', 'me', '-p', '***', 'db']"),
    (
        '["docker", "login", "-u", "me", "-p", "Zq9secZ", "ghcr.io"]',
        '["docker", "login", "-u", "me", "-p", "***", "ghcr.io"]',
    ),
    ("docker\nlogin\n-u\nme\n-p\nZq9secZ\nghcr.io", "docker\nlogin\n-u\nme\n-p\n***\nghcr.io"),
    (
        "[\n  'sshpass',\n  '-p',\n  'Zq9secZ',\n  'ssh',\n]",
        "[\n  'sshpass',\n  '-p',\n  '***',\n  'ssh',\n]",
    ),
    ("['-p', 'Zq9secZ']", "['-p', '***']"),
    ("mysql\n--password\nZq9secZ", "mysql\n--password\n***"),
]
# -p that is no password: ssh's port, docker run's ports, mkdir's parents, git's patch,
# pytest's plugin, a number or path; and a short flag after a --password that takes no value
P_KEPT = [
    "ssh\n-p\n2222\nme@host.org",
    "['ssh', '-p', '2222', 'me@host.org']",
    "ssh -p\n2222 me@host.org",
    "mkdir\n-p\nout",
    "['mkdir', '-p', 'out']",
    "git\nlog\n-p\nHEAD",
    "git log -p\nHEAD",
    '["docker", "run", "-p", "8080:80", "img"]',
    "docker\nrun\n-p\n8080:80\nimg",
    "pytest\n-p\nno:cacheprovider",
    "['python', 'train.py', '-p', '0.5']",
    "python\nserve.py\n-p\n8080",
    "psql -h db -p\n5432 -U me",
    "psql --password -h db -U me",
    "mysql -u me -p -h db",
]


@pytest.mark.parametrize(("text", "shown"), P_NEXT)
def test_a_short_p_password_on_the_next_line_or_element_is_masked(text, shown):
    assert mask_text(text) == shown
    assert mask_text(shown) == shown
    assert "Zq9" not in str(mask_tree({"kind": "alert", "text": text}))


@pytest.mark.parametrize("text", P_KEPT)
def test_a_short_p_that_takes_no_password_keeps_the_next_word(text):
    assert mask_text(text) == text


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (["mysql", "-u", "me", "-p", "Zq9secZ", "db"], ["mysql", "-u", "me", "-p", "***", "db"]),
        (["-p", "Zq9secZ"], ["-p", "***"]),
        (["docker", "login", "-p", "Zq9secZ"], ["docker", "login", "-p", "***"]),
        (["ssh", "-p", "2222", "me@host.org"], None),
        (["mkdir", "-p", "out"], None),
        (["git", "log", "-p", "HEAD"], None),
        (["psql", "--password", "-h", "db", "-U", "me"], None),
        (["mysql", "-u", "me", "-p", "-h", "db"], None),
    ],
)
def test_a_short_p_in_an_argv_is_masked_only_where_it_is_a_password(argv, shown):
    assert mask_argv(argv) == (argv if shown is None else shown)


# an Azure connection string: only the key's value goes, wherever the key stands in it
AZURE = [
    (
        "AccountKey=Zq9secZ==;AccountName=acct;EndpointSuffix=core.windows.net",
        "AccountKey=***;AccountName=acct;EndpointSuffix=core.windows.net",
    ),
    (
        "conn AccountKey=Zq9secZ==;AccountName=acct;DefaultEndpointsProtocol=https ok",
        "conn AccountKey=***;AccountName=acct;DefaultEndpointsProtocol=https ok",
    ),
    (
        'AZ="AccountKey=Zq9secZ==;AccountName=acct;EndpointSuffix=core.windows.net"',
        'AZ="AccountKey=***;AccountName=acct;EndpointSuffix=core.windows.net"',
    ),
    (
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Zq9secZ==;"
        "EndpointSuffix=core.windows.net",
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=***;"
        "EndpointSuffix=core.windows.net",
    ),
    ("AccountKey=Zq9secZ==;", "AccountKey=***;"),
    (
        "Endpoint=sb://x.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;"
        "SharedAccessKey=Zq9secZ=",
        "Endpoint=sb://x.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;"
        "SharedAccessKey=***",
    ),
    ('password="Zq9;sec=Z"', 'password="***"'),  # a quoted value is one value, `;` and all
]


@pytest.mark.parametrize(("text", "shown"), AZURE)
def test_a_connection_string_shows_only_its_key_masked(text, shown):
    assert mask_text(text) == shown
    assert mask_text(shown) == shown
    assert mask_argv(["az", "--connection-string", text]) == ["az", "--connection-string", shown]


# token shapes of package registries and services, under any name or none; and a password
# written after its word with a space, a tab or a colon (a log line, `passwd V`)
NPM = "npm_" + "a1B2c3D4e5" * 3 + "f6G7h8"  # npm_ and 36 letters and digits
PYPI = "pypi-AgEIcHlwaS5vcmcCJDU3OTM4NWY0LWFhZjMtNDA3Yi04ZjY5LWU0ZDU2MWY2ZTlmYQACKlsz"
DOCKER = "dckr_pat_Zq9secZ0aBcDeFgHiJkLmNoPqRsT"
TG = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawq"  # a Telegram bot's id and secret
GH_FINE = "github_pat_11ABCDEFG0" + "aBcDeFgHiJ" * 6 + "_xYz"
AWS_ID, AWS_SECRET = "AKIAIOSFODNN7EXAMPL3", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
MORE_SHAPES = [
    (f"npm ERR! 403 with {NPM} for @scope/pkg", "npm ERR! 403 with *** for @scope/pkg"),
    (f"NPM_TOKEN_VALUE {NPM}", "NPM_TOKEN_VALUE ***"),
    (f"twine upload -u __token__ -p {PYPI} dist/*", "twine upload -u __token__ -p *** dist/*"),
    (f"upload refused for {PYPI}.", "upload refused for ***."),
    (f"echo {DOCKER} | docker login -u me --password-stdin", None),
    (
        f"POST https://api.telegram.org/bot{TG}/sendMessage failed: 429",
        "POST https://api.telegram.org/bot***/sendMessage failed: 429",
    ),
    (f"tgram://{TG}/-100123 refused", None),
    (f"telegram said no to {TG}", "telegram said no to ***"),
    (  # Telegram's own example of a token
        "curl https://api.telegram.org/bot110201543:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/getMe",
        "curl https://api.telegram.org/bot***/getMe",
    ),
    (f"push with {GH_FINE} refused", "push with *** refused"),
    ("slack xoxb-1234567890-0987654321-AbCdEfGhIjKl failed", "slack *** failed"),
    ("slack xoxp-1234567890-0987654321-AbCdEfGhIjKl failed", "slack *** failed"),
    (f"aws keys {AWS_ID} {AWS_SECRET} loaded", "aws keys *** *** loaded"),
    (f"{AWS_ID},{AWS_SECRET}", "***,***"),
    (f'["{AWS_ID}", "{AWS_SECRET}"]', '["***", "***"]'),
    (f"aws_secret_access_key = {AWS_SECRET}", "aws_secret_access_key = ***"),
    ("login failed: password hunter2", "login failed: password ***"),
    ("passwd hunter2", "passwd ***"),
    ("db password\thunter2\tuser bob", "db password\t***\tuser bob"),
    ("PASSWORD S3cr3t!", "PASSWORD ***"),
    ("password: hunter2", "password: ***"),
    ("password:hunter2 rejected", "password:*** rejected"),
    ("new password 'correct horse battery staple' set", "new password '***' set"),
    ("password 12345678", "password ***"),
    ("password hUnTeR", "password ***"),
    ("the password hunter2 was rejected", "the password *** was rejected"),
]
# prose with the word in it: what follows is a word of a sentence, not a password
MORE_KEPT = [
    "password reset link sent",
    "the password is wrong",
    "Password incorrect, 2 attempts left",
    'password authentication failed for user "postgres"',
    "password for root@db.example.org:",
    "passwd root",
    "passwd -l bob",
    "password must be 8 characters",
    "password OK",
    "password isn't set",
    "password re-entered",
    "password (hidden)",
    "password 2 of 3",
    "password --lr 3",
    "password $DB_PASSWORD",
    "password true",
    "npm_config_cache=/tmp/npm and npm_package_version 1.2.3",
    "pypi-simple index at https://pypi.org/simple",
    "bot 12:30:45 started",
    f"commit {HEX[:8]}:{HEX[:30]}",
    f"commit 12345678:{HEX[:35]}",
    "AKIA is an AWS key id's prefix",
]


@pytest.mark.parametrize(("text", "shown"), MORE_SHAPES)
def test_each_registry_token_and_spaced_password_is_masked(text, shown):
    secrets = (NPM, PYPI, DOCKER, TG, GH_FINE, AWS_ID, AWS_SECRET, "hunter2", "S3cr3t", "horse")
    got = mask_text(text)
    for s in secrets:
        assert s not in got, (s, got)
        assert s not in str(mask_tree({"kind": "alert", "text": text}))
    if shown is not None:
        assert got == shown
    assert mask_text(got) == got  # masking twice changes nothing
    assert not any(s in mask_argv(["echo", text])[1] for s in secrets)


@pytest.mark.parametrize("text", MORE_KEPT)
def test_prose_near_those_shapes_is_kept(text):
    assert mask_text(text) == text


def test_an_aws_key_pair_in_an_argv_is_masked_both():
    assert mask_argv(["aws-login", AWS_ID, AWS_SECRET, "--region", "eu-west-1"]) == [
        "aws-login", "***", "***", "--region", "eu-west-1",
    ]  # fmt: skip
    assert mask_argv(["python", "t.py", AWS_SECRET]) == ["python", "t.py", AWS_SECRET]


# a secret-named `K=V` inside a flag's value (`--env=K=V`, `--opts=token=V`), and a variable
# set by a program's own code (`os.environ["HF_TOKEN"] = "V"`): the value goes, the name stays
V = "Zq8xP2mK9vR4tL7w"
NESTED = [
    (f"--env=WANDB_API_KEY={V}", "--env=WANDB_API_KEY=***"),
    (f"--opts=token={V}", "--opts=token=***"),
    (f"--from-literal=token={V}", "--from-literal=token=***"),
    (f"--set=a.b.api_key={V}", "--set=a.b.api_key=***"),
    (f"--env=HF_TOKEN='{V}'", "--env=HF_TOKEN='***'"),
    (f'import os; os.environ["HF_TOKEN"]="{V}"', 'import os; os.environ["HF_TOKEN"]="***"'),
    (f"os.environ['WANDB_API_KEY'] = '{V}'; main()", "os.environ['WANDB_API_KEY'] = '***'; main()"),
    (f'cfg["db"]["password"]="{V}"', 'cfg["db"]["password"]="***"'),
]
NESTED_KEPT = [
    "--env=TOKENIZERS_PARALLELISM=false",
    "--env=HF_TOKEN=$HF_TOKEN",
    "--opts=use_auth_token=true",
    "--define=max_tokens=100",
    'os.environ["HF_TOKEN"] = os.environ["MY_TOKEN_SOURCE"]',
    'os.environ["HF_HOME"] = "/data/hf"',
    'cfg["api_key"] = ""',
]


@pytest.mark.parametrize(("text", "shown"), NESTED)
def test_a_pair_inside_a_flag_value_or_a_program_setting_a_variable_is_masked(text, shown):
    assert mask_argv(["python3", text]) == ["python3", shown]
    assert mask_text(f"alert: {text}") == f"alert: {shown}"
    assert mask_text(shown) == shown
    assert env_secret("EXTRA", text)


@pytest.mark.parametrize("text", NESTED_KEPT)
def test_a_pair_inside_a_flag_value_that_grants_nothing_is_kept(text):
    assert mask_argv(["python3", text]) == ["python3", text]
    assert mask_text(text) == text


# more written forms of a key and its value: percent-encoded (a URL inside a URL), a key under
# a path, glued by a colon, a table's tab, a hash's arrow (Ruby, Perl, PHP), and said in a
# sentence (`my hub_token is V`)
MORE_FORMS = [
    (f"https://x.org/cb?token%3D{V}", "https://x.org/cb?token%3D***"),
    (f"?token%3D{V}&lang=en", "?token%3D***&lang=en"),
    (f"open api_key%3D{V} now", "open api_key%3D*** now"),
    (
        f"https://x.org/login?next=https%3A%2F%2Fy.org%2F%3Fapi_key%3D{V}%26lang%3Den",
        "https://x.org/login?next=https%3A%2F%2Fy.org%2F%3Fapi_key%3D***%26lang%3Den",
    ),
    (f"next%3D%252F%253Faccess_token%253D{V}", "next%3D%252F%253Faccess_token%253D***"),
    (f"a/b/api_key={V}", "a/b/api_key=***"),
    (
        f"run with trainer/logger/wandb_api_key={V} ok",
        "run with trainer/logger/wandb_api_key=*** ok",
    ),
    (f"HF_TOKEN:{V}", "HF_TOKEN:***"),
    (f"env says WANDB_API_KEY:{V}, retry", "env says WANDB_API_KEY:***, retry"),
    (f"HF_TOKEN\t{V}", "HF_TOKEN\t***"),
    (f"NAME\tVALUE\nHF_TOKEN\t{V}\nHF_HOME\t/data", "NAME\tVALUE\nHF_TOKEN\t***\nHF_HOME\t/data"),
    (f"api_key => {V}", "api_key => ***"),
    (f":api_key => '{V}', :lr => 3", ":api_key => '***', :lr => 3"),
    (f"'password' => \"{V}\"", "'password' => \"***\""),
    (f"# my hub_token is {V}", "# my hub_token is ***"),
    (f"my API key is {V}.", "my API key is ***."),
    (f"the password was {V}, sorry", "the password was ***, sorry"),
    (f'HF_TOKEN is "{V}"', 'HF_TOKEN is "***"'),
]
MORE_FORMS_KEPT = [
    "https://x.org/search?q=a%3Db&url%3Dhttps",
    "next%3D%2Fhome%26lang%3Den",
    "data/train/split=val and ./out/max_tokens=5",
    "step:1 loss:1.0 tokens:512 max_tokens:100",
    "docker run auth-service:v2 ghcr.io/org/hf_token:latest",
    "HF_TOKEN:true and API_KEY:$API_KEY",
    "at 12:30:45 TOKEN_COUNT:12",
    "TOKEN\tEXPIRES\tSCOPE",
    "HF_TOKEN\tunset",
    "the hub_token is missing",
    "HF_TOKEN is set, the api_key is required",
    "the token is expired and the key is 12345678",
    "the primary key is user_id",
    "the first pass is done; token is 5",
    "api_key => nil, token => undef",
    "the api_key is $WANDB_API_KEY",
    "the token is <pad> and the pad token is eos_token",
    "the auth is oauth2",
    "image: auth_service:v2, def f(api_key:str), ssh_key:/home/me/.ssh/id_rsa",
    "HF_TOKEN:Optional[str]",
    "unknown_key\trecipe.sede",
]


@pytest.mark.parametrize(("text", "shown"), MORE_FORMS)
def test_each_more_written_form_of_a_key_is_masked(text, shown):
    assert mask_text(text) == shown
    assert mask_text(shown) == shown
    assert V not in mask_argv(["echo", text])[1]
    assert V not in str(mask_tree({"kind": "alert", "text": text}))


@pytest.mark.parametrize("text", MORE_FORMS_KEPT)
def test_text_near_those_forms_is_kept(text):
    assert mask_text(text) == text


# what an ML user writes near those forms that holds no credential: each is shown as written
# and may be recorded (`recordable`), as it could before those forms were read
ORDINARY = [
    "loss spike at step 400: the offending token was 50256 (EOS)",
    "the eos token is 128001 for llama3",
    "the pad token was 151643 so masking was wrong",
    "the token was 12345",
    "the session cookie was 4KB",
    "the cookie was 3KB, the token is 1.5e3",
    "access token was Expired2 so W&B logging stopped",
    "reviewed: the API key is WANDB_API_KEY from the env",
    "The API key is WANDB_API_KEY in the environment.",
    "The secret is SECRET_KEY_BASE, see Rails docs.",
    "token\t50256\ncookie\t4KB",
    "AUTH => FAILED on node 3, rerun",
    "AUTH => CONNECTED",
    "NCCL_AUTH_MODE:Strict was set",
    "HF_TOKEN:str",
    "AUTH_MODE:OAuth2 AUTH_TYPE:Bearer SECRET_SCAN:Enabled",
    "AUTH_TYPE\tBearer\nthe AUTH_MODE is OAuth2, :auth_type => OAuth2",
    "comparator from sweep key=3/seed=1",
    "python train.py --output_dir outputs/key=3/seed=1",
    "cp -r runs/key=Ab12Cd34 ckpt/",
    "d['key'] = 'ModelV2'",
    'sample["__key__"] = "000123"',
    "https://www.google.com/search?q=pass%3Dfail+rate",
    "https://example.com/redirect?next=%2Fsearch%3Fkey%3DLearningRate",
    "?q=auth%3DDisabled",
]
# and what stays masked beside them (a password may be a number, a token is not)
STILL_MASKED = [
    ("the password was 12345678", "the password was ***"),
    ("DB_PASSWORD\t12345678", "DB_PASSWORD\t***"),
    (f"the access token was {V}", "the access token was ***"),
    (f"HF_TOKEN\t{V}", "HF_TOKEN\t***"),
    (f"HF_TOKEN:{V} SECRET_KEY:{V}", "HF_TOKEN:*** SECRET_KEY:***"),
    (f":auth_token => '{V}'", ":auth_token => '***'"),
    (f"key={V} and --key=3/seed=1", "key=*** and --key=3/seed=1"),
    (f"outputs/api_key={V}/seed=1", "outputs/api_key=***"),
    (f"d['api_key'] = '{V}'; d['pass'] = '{V}'", "d['api_key'] = '***'; d['pass'] = '***'"),
    (f"?q=x&next=%2F%3Fsig%3D{V}%26api_key%3D{V}", "?q=x&next=%2F%3Fsig%3D***%26api_key%3D***"),
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_near_a_keyed_form_is_kept_and_recordable(text):
    assert mask_text(text) == text
    assert recordable(text, "--text") == text


@pytest.mark.parametrize(("text", "shown"), STILL_MASKED)
def test_a_credential_beside_that_text_is_still_masked(text, shown):
    assert mask_text(text) == shown


# a secret set as other shells, files and languages write it: csh, fish, PowerShell, a
# Dockerfile, make, R, `aws configure set`, `git config`
SET_FORMS = [
    (f"setenv HF_TOKEN {V}", "setenv HF_TOKEN ***"),
    (f"set -x HF_TOKEN {V}", "set -x HF_TOKEN ***"),
    (f"set -gx WANDB_API_KEY {V}; python t.py", "set -gx WANDB_API_KEY ***; python t.py"),
    (f'set --export HF_TOKEN "{V}"', 'set --export HF_TOKEN "***"'),
    (f'$env:HF_TOKEN = "{V}"', '$env:HF_TOKEN = "***"'),
    (f'$Env:WANDB_API_KEY="{V}"; python t.py', '$Env:WANDB_API_KEY="***"; python t.py'),
    (f"ENV HF_TOKEN {V}", "ENV HF_TOKEN ***"),
    (f"HF_TOKEN := {V}\nHF_HOME := /data", "HF_TOKEN := ***\nHF_HOME := /data"),
    (f"HF_TOKEN ?= {V}", "HF_TOKEN ?= ***"),
    (f'api_key <- "{V}"', 'api_key <- "***"'),
    (f"aws configure set aws_secret_access_key {V}", "aws configure set aws_secret_access_key ***"),
    (f"git config --global user.password {V}", "git config --global user.password ***"),
]
SET_KEPT = [
    "set -euo pipefail",
    "set -x; ENV HF_HOME /data",
    "setenv HF_TOKEN $HF_TOKEN",
    "HF_TOKEN ?= $(HF_TOKEN) and HF_TOKEN := ${HF_TOKEN}",
    'api_key <- Sys.getenv("API_KEY"); api_key <- key_var',
    "token_ids <- c(1, 2)",
    "ENV HF_TOKEN is read at build, we set -x HF_TOKEN before the run",
    "the config token expired",
]


@pytest.mark.parametrize(("text", "shown"), SET_FORMS)
def test_a_secret_set_as_a_shell_a_file_or_a_language_writes_it_is_masked(text, shown):
    assert mask_text(text) == shown
    assert mask_text(shown) == shown
    assert V not in " ".join(mask_argv(["sh", "-c", text]))
    assert V not in str(mask_tree({"kind": "alert", "text": text}))


@pytest.mark.parametrize("text", SET_KEPT)
def test_text_near_those_settings_is_kept(text):
    assert mask_text(text) == text


# a secret set by a call in a program's own code (`python -c '...'` too)
CALL_FORMS = [
    (f'os.environ.setdefault("HF_TOKEN", "{V}")', 'os.environ.setdefault("HF_TOKEN", "***")'),
    (f'os.putenv("HF_TOKEN", "{V}"); main()', 'os.putenv("HF_TOKEN", "***"); main()'),
    (f"monkeypatch.setenv('WANDB_API_KEY', '{V}')", "monkeypatch.setenv('WANDB_API_KEY', '***')"),
    (f'os.Setenv("HF_TOKEN", "{V}")', 'os.Setenv("HF_TOKEN", "***")'),
]
CALL_KEPT = [
    'os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")',
    'os.environ.setdefault("HF_TOKEN", "")',
    'sample.setdefault("key", "000123")',
    'os.putenv("HF_TOKEN", os.environ["HUB_TOKEN"])',
]


@pytest.mark.parametrize(("text", "shown"), CALL_FORMS)
def test_a_secret_a_program_sets_by_a_call_is_masked(text, shown):
    assert mask_text(text) == shown
    assert mask_text(shown) == shown
    assert mask_argv(["python", "-c", text]) == ["python", "-c", shown]


@pytest.mark.parametrize("text", CALL_KEPT)
def test_a_call_that_sets_no_secret_is_kept(text):
    assert mask_text(text) == text


# a program's own password flag (`redis-cli -a V`, in a note's prose too) and openssl's
# pass phrase arguments (`-passin pass:V`)
PROGRAM_FORMS = [
    (f"redis-cli -a {V} ping", "redis-cli -a *** ping"),
    (
        f"redis-cli -h db -p 6379 -a {V} --no-auth-warning",
        "redis-cli -h db -p 6379 -a *** --no-auth-warning",
    ),
    (f"flushed it; also redis-cli -a {V}", "flushed it; also redis-cli -a ***"),
    (f"redis-cli -a \\\n  {V}", "redis-cli -a \\\n  ***"),
    (f"ldapsearch -x -D cn=admin -w {V} -b dc=x", "ldapsearch -x -D cn=admin -w *** -b dc=x"),
    (f"openssl rsa -in k.pem -passin pass:{V}", "openssl rsa -in k.pem -passin ***"),
    (f"openssl pkcs12 -export -passout pass:{V}", "openssl pkcs12 -export -passout ***"),
]
PROGRAM_KEPT = [
    "ls -a /tmp && git commit -a -m wip && uname -a",
    "redis-cli -p 6379 ping",
    "redis-cli -a $REDIS_PASSWORD ping",
    "tar -cf out.tar -P data",
]


@pytest.mark.parametrize(("text", "shown"), PROGRAM_FORMS)
def test_a_program_s_own_password_flag_is_masked(text, shown):
    assert mask_text(text) == shown
    assert mask_text(shown) == shown


def test_a_program_s_own_password_flag_is_masked_in_an_argv():
    assert mask_argv(["redis-cli", "-a", V, "ping"]) == ["redis-cli", "-a", "***", "ping"]
    assert mask_argv(["openssl", "rsa", "-passin", f"pass:{V}"]) == [
        "openssl", "rsa", "-passin", "***",
    ]  # fmt: skip


@pytest.mark.parametrize("text", PROGRAM_KEPT)
def test_the_same_letters_elsewhere_are_kept(text):
    assert mask_text(text) == text


# a URL inside another's query: unencoded (`?next=?token=V`), or its user info encoded
URL_FORMS = [
    (f"https://ex.com/?next=?token={V}", "https://ex.com/?next=?token=***"),
    (f"https://ex.com/?next=/login?token={V}&b=2", "https://ex.com/?next=/login?token=***&b=2"),
    (f"https://ex.com/#next=?access_token={V}", "https://ex.com/#next=?access_token=***"),
    (
        f"https://ex.com/a?next=https%3A%2F%2Fu%3A{V}%40host%2F",
        "https://ex.com/a?next=https%3A%2F%2Fu%3A***%40host%2F",
    ),
    (
        f"go to https://ex.com/a?next=https%253A%252F%252Fme%253A{V}%2540host now",
        "go to https://ex.com/a?next=https%253A%252F%252Fme%253A***%2540host now",
    ),
]
URL_KEPT = [
    "https://ex.com/?next=/search?q=pass+rate&lang=en",
    "https://x.org/?next=https%3A%2F%2Fy.org%2Fa%3Ab%40c",
    "https://ex.com/?q=me%3Ahi%40x.org",
]


@pytest.mark.parametrize(("text", "shown"), URL_FORMS)
def test_a_url_inside_another_s_query_is_masked(text, shown):
    assert mask_text(text) == shown
    assert mask_text(shown) == shown
    assert V not in mask_argv(["curl", text])[1]


@pytest.mark.parametrize("text", URL_KEPT)
def test_a_url_inside_another_s_query_holding_none_is_kept(text):
    assert mask_text(text) == text


# a key said with a colon after its verb, and glued in snake case to a credential's mix
SAID_GLUED_FORMS = [
    (f"my token is: {V}", "my token is: ***"),
    (f"the password was: {V}, sorry", "the password was: ***, sorry"),
    (f"hf_token:{V}", "hf_token:***"),
    (f'cfg hf_token:"{V}" lr:3', 'cfg hf_token:"***" lr:3'),
]
SAID_GLUED_KEPT = [
    "the token is: expired, the eos token is: 50256",
    "docker run auth_service:v2 auth_service:1.2.3-alpine auth_service:build-20240101",
    "def f(api_key:str, hf_token:Optional[str]): ...",
    "hub_token:unset",
]


@pytest.mark.parametrize(("text", "shown"), SAID_GLUED_FORMS)
def test_a_key_said_with_a_colon_or_glued_in_snake_case_is_masked(text, shown):
    assert mask_text(text) == shown
    assert mask_text(shown) == shown


@pytest.mark.parametrize("text", SAID_GLUED_KEPT)
def test_text_near_a_colon_said_or_glued_key_is_kept(text):
    assert mask_text(text) == text
