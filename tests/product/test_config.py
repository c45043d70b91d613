"""Config and setup errors a new user meets first: each one a UserError that names what is wrong
and what to do (never an internal error, never a silent degradation). Real files and folders in
tmp_path; HOME, the data dir, the config and the socket point into it."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from remembrancer.indexer import config as cfgmod
from remembrancer.indexer.config import Config, load_config, make_roots
from remembrancer.indexer.errors import UserError


@pytest.fixture
def env(tmp_path, monkeypatch):
    """A private HOME (with notes inside), data dir, config file path and socket."""
    home = tmp_path / "home"
    (home / "notes" / "hosts").mkdir(parents=True)
    (home / "notes" / "hosts" / "db1.md").write_text("# db1\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("REMEMBRANCER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("REMEMBRANCER_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("REMEMBRANCER_SOCKET", str(tmp_path / "d.sock"))
    return tmp_path


def write_config(env: Path, text: str) -> Path:
    path = env / "config.toml"
    path.write_text(text)
    return path


# -- roots: / and the home folder --------------------------------------------------------------------

def test_the_filesystem_root_and_the_home_folder_are_refused_as_roots(env):
    home = env / "home"
    for raw, what in (("/", "the filesystem root"), (str(home), "your home folder"), ("~", "your home folder"),
                      (str(home / "notes" / ".."), "your home folder")):
        with pytest.raises(UserError) as e:
            make_roots([raw])
        assert what in e.value.message and "never what was meant" in e.value.message, raw
        assert e.value.param == "root" and "--root ~/notes" in e.value.hint
    assert [r.name for r in make_roots(["~/notes"])] == ["notes"]   # a folder inside home is fine


def test_a_configured_home_root_is_refused_naming_the_config_file(env):
    path = write_config(env, 'roots = ["~"]\n')
    with pytest.raises(UserError) as e:
        load_config(None)
    assert str(path) in e.value.message and "your home folder" in e.value.message
    assert e.value.param == "roots" and str(path) in e.value.hint and 'roots = ["~/notes"]' in e.value.hint


# -- roots: one inside another ---------------------------------------------------------------------

@pytest.mark.parametrize("order", ["outer first", "inner first"])
def test_a_root_inside_another_is_refused_naming_both(env, order):
    outer, inner = env / "home" / "notes", env / "home" / "notes" / "hosts"
    paths = [str(outer), str(inner)] if order == "outer first" else [str(inner), str(outer)]
    with pytest.raises(UserError) as e:
        make_roots(paths)
    assert f"root {inner} is inside root {outer}" in e.value.message and "twice" in e.value.message
    assert f"give only the outer folder: --root {outer}" == e.value.hint


def test_nested_configured_roots_are_refused_and_side_by_side_ones_kept(env):
    notes = env / "home" / "notes"
    (env / "home" / "work").mkdir()
    path = write_config(env, f'roots = ["{notes}", "{notes}/hosts"]\n')
    with pytest.raises(UserError) as e:
        load_config(None)
    assert str(path) in e.value.message and "inside root" in e.value.message and str(path) in e.value.hint
    # the same folder twice is still one root, and siblings are two
    assert len(make_roots([notes, str(notes) + "/"])) == 1
    assert [r.name for r in make_roots([notes, env / "home" / "work"])] == ["notes", "work"]


# -- roots from the config file: the hint names the file -----------------------------------------------

def test_a_missing_configured_root_names_the_config_file_not_root_flag(env):
    path = write_config(env, f'roots = ["{env / "gone"}"]\n')
    with pytest.raises(UserError) as e:
        load_config(None)
    assert "root not found" in e.value.message and str(path) in e.value.message
    assert e.value.param == "roots" and "roots = [...]" in e.value.hint and str(path) in e.value.hint
    with pytest.raises(UserError) as flag:   # the same folder from --root keeps the --root hint
        load_config([str(env / "gone")])
    assert flag.value.hint == "pass an existing folder with --root" and flag.value.param == "root"


# -- unknown keys: all of them at once --------------------------------------------------------------

def test_every_unknown_key_is_reported_in_one_error(env):
    write_config(env, 'rots = ["~/notes"]\nzzz = 1\n[indx]\nexclude = []\n[model]\npth = "/x"\n')
    with pytest.raises(UserError) as e:
        load_config(None)
    msg = e.value.message
    for part in ("unknown key 'rots' (did you mean 'roots'?)", "unknown key 'zzz'", "unknown table 'indx' (did you "
                 "mean 'index'?)", "unknown [model] key 'pth' (did you mean 'path'?)"):
        assert part in msg, msg
    assert "model.path" in e.value.options and "roots" in e.value.options


def test_one_unknown_key_is_reported_as_before(env):
    write_config(env, "[index]\nexclud = []\n")
    with pytest.raises(UserError) as e:
        load_config(None)
    assert "unknown [index] key 'exclud' (did you mean 'exclude'?)" in e.value.message
    assert e.value.param == "exclud" and e.value.options == ["exclude", "max_file_bytes"]


# -- [model] path ---------------------------------------------------------------------------------

def test_a_configured_model_folder_that_does_not_exist_is_refused_at_load(env):
    path = write_config(env, '[model]\npath = "/nonexistent/model"\n')
    with pytest.raises(UserError) as e:
        load_config(None)
    assert "'/nonexistent/model' does not exist" in e.value.message and e.value.param == "model.path"
    assert str(path) in e.value.hint and "remove it to use the default model" in e.value.hint
    afile = env / "model.onnx"
    afile.write_text("")
    write_config(env, f'[model]\npath = "{afile}"\n')
    with pytest.raises(UserError, match="is not a folder"):
        load_config(None)
    write_config(env, "[model]\npath = 5\n")
    with pytest.raises(UserError, match="path must be a folder path string"):
        load_config(None)
    (env / "m").mkdir()   # a folder that exists is the loader's to judge (doctor FAILs it)
    write_config(env, f'[model]\npath = "{env / "m"}"\n')
    assert load_config(None).model == str(env / "m")


def test_the_model_loader_says_a_folder_is_missing_or_lists_only_the_missing_files(tmp_path, tiny_model_dir):
    from remembrancer.indexer.models.embed import ModelError, load_embedder_from_dir

    with pytest.raises(ModelError) as e:
        load_embedder_from_dir(tmp_path / "nope")
    assert "does not exist" in str(e.value) and "lacks" not in str(e.value)
    partial = shutil.copytree(tiny_model_dir, tmp_path / "m")
    (partial / "tokenizer.json").unlink()
    with pytest.raises(ModelError) as e:
        load_embedder_from_dir(partial)
    assert str(e.value) == f"model directory {partial} lacks tokenizer.json"


# -- the data dir -----------------------------------------------------------------------------------

@pytest.mark.parametrize("case", ["a file", "under a file", "not creatable"])
def test_an_unusable_data_dir_is_a_user_error_naming_the_variable(env, monkeypatch, case):
    afile = env / "afile"
    afile.write_text("")
    where = {"a file": afile, "under a file": afile / "data", "not creatable": Path("/proc/nonexistent/data")}[case]
    if case == "not creatable" and not Path("/proc/self").exists():
        pytest.skip("needs Linux /proc")
    monkeypatch.setenv("REMEMBRANCER_DATA_DIR", str(where))
    cfg = Config(roots=make_roots([env / "home" / "notes"]))
    with pytest.raises(UserError) as e:
        cfg.index_dir()
    assert e.value.param == "REMEMBRANCER_DATA_DIR" and "REMEMBRANCER_DATA_DIR" in e.value.message
    assert str(where) in e.value.message and "set REMEMBRANCER_DATA_DIR to a folder you can write" in e.value.hint
    if case != "not creatable":
        assert f"{afile} is a file, not a folder" in e.value.message


def test_a_missing_data_dir_is_created_private(env):
    cfg = Config(roots=make_roots([env / "home" / "notes"]))
    assert cfg.index_dir().parent.parent == env / "data"
    assert (env / "data").is_dir() and (env / "data").stat().st_mode & 0o777 == 0o700


# -- the socket path --------------------------------------------------------------------------------

def long_socket(tmp_path: Path, length: int = 120) -> Path:
    """A socket path of `length` bytes (AF_UNIX takes at most 107 on Linux, 103 on macOS)."""
    return tmp_path / ("s" * (length - len(str(tmp_path)) - 1))


def test_a_socket_path_longer_than_af_unix_allows_is_refused(env, monkeypatch):
    sock = long_socket(env)
    monkeypatch.setenv("REMEMBRANCER_SOCKET", str(sock))
    with pytest.raises(UserError) as e:
        cfgmod.socket_path()
    assert e.value.param == "REMEMBRANCER_SOCKET" and "120 bytes long" in e.value.message
    assert "REMEMBRANCER_SOCKET" in e.value.message and "shorter path" in e.value.hint
    at_limit = long_socket(env, cfgmod.SOCKET_PATH_MAX)
    monkeypatch.setenv("REMEMBRANCER_SOCKET", str(at_limit))
    assert cfgmod.socket_path() == at_limit
    with pytest.raises(UserError):
        cfgmod.check_socket_path(long_socket(env, cfgmod.SOCKET_PATH_MAX + 1))


def test_a_client_refuses_a_too_long_socket_instead_of_ignoring_it(env, monkeypatch):
    from remembrancer.daemon.connect import connect

    monkeypatch.setenv("REMEMBRANCER_SOCKET", str(long_socket(env)))
    cfg = Config(roots=make_roots([env / "home" / "notes"]))
    with pytest.raises(UserError) as e:   # it used to fall back to in-process, never finding a daemon
        connect(cfg, start=True, readonly_fallback=True)
    assert e.value.param == "REMEMBRANCER_SOCKET"


def test_the_daemon_refuses_a_too_long_socket_before_opening_any_corpus(env, monkeypatch):
    from remembrancer.daemon.server import Daemon

    monkeypatch.setenv("REMEMBRANCER_SOCKET", str(long_socket(env)))
    t0 = time.monotonic()
    with pytest.raises(UserError) as e:
        Daemon(load_config([str(env / "home" / "notes")]))   # no embedder given: the default model would load
    assert e.value.param == "REMEMBRANCER_SOCKET" and time.monotonic() - t0 < 5
    assert not (env / "data" / "indexes").exists()   # no corpus was opened


def test_the_daemon_refuses_an_unusable_data_dir_before_binding(env, monkeypatch):
    from remembrancer.daemon.server import Daemon

    (env / "afile").write_text("")
    monkeypatch.setenv("REMEMBRANCER_DATA_DIR", str(env / "afile"))
    with pytest.raises(UserError) as e:
        Daemon(Config())
    assert e.value.param == "REMEMBRANCER_DATA_DIR"
    assert not (env / "d.sock").exists()


def test_the_default_socket_path_says_nothing_without_xdg_runtime_dir(monkeypatch):
    """platformdirs warns on every call when XDG_RUNTIME_DIR is unset (a container, su, ssh): every
    command printed it to stderr."""
    import warnings

    monkeypatch.delenv("REMEMBRANCER_SOCKET", raising=False)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cfgmod.socket_path().name == "daemon.sock"


def test_a_projects_claude_code_folder_is_found_by_itself_and_config_or_flags_win(env, tmp_path, monkeypatch):
    claude = tmp_path / "claude"
    project = tmp_path / "code" / "my.app"
    (project / "src").mkdir(parents=True)
    slug = cfgmod.project_slug(project)
    assert slug == "".join(c if c.isalnum() else "-" for c in str(project)) and slug.endswith("-code-my-app")
    (claude / "projects" / slug).mkdir(parents=True)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    monkeypatch.chdir(project / "src")   # started in a subfolder: the project's folder above it is found
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    found = load_config(["~/notes"]).conversations
    assert [r.path for r in found] == [(claude / "projects" / slug).resolve()] and found[0].kind == "conversations"
    other = tmp_path / "elsewhere"
    other.mkdir()
    assert [r.path for r in load_config(["~/notes"], conversation_args=[str(other)]).conversations] == [other.resolve()]
    cfg = write_config(env, "")
    cfg.write_text("[conversations]\nfind = false\n")
    assert load_config(["~/notes"]).conversations == []
    cfg.write_text(f'[conversations]\nroots = ["{other}"]\n')
    assert [r.path for r in load_config(["~/notes"]).conversations] == [other.resolve()]
    cfg.write_text("[conversations]\nfolders = []\n")
    with pytest.raises(UserError) as err:
        load_config(["~/notes"])
    assert "folders" in err.value.message
    cfg.write_text('[conversations]\nroots = ["~/nowhere"]\n')
    with pytest.raises(UserError) as err:
        load_config(["~/notes"])
    assert "[conversations] roots" in err.value.message and err.value.param == "conversations"
    notes = load_config(["~/notes"], conversation_args=[str(other)])
    talk = notes.conversation_config()
    assert talk.kind == "conversations" and talk.index_name() != notes.index_name()
    assert Config(roots=make_roots([other])).index_name() != \
        Config(roots=make_roots([other], kind="conversations"), kind="conversations").index_name()


# -- [model] url and [rerank] ------------------------------------------------------------------------

def test_an_embedding_server_is_configured_with_its_query_server_and_prefixes(env):
    write_config(env, '[model]\nurl = "http://localhost:11434/v1"\nname = "nomic-embed-text"\n'
                      'query_prefix = "search_query: "\ndocument_prefix = "search_document: "\n'
                      'api_key_env = "EMBED_KEY"\nbatch = 64\ntimeout = 12.5\n'
                      '[model.query]\nurl = "http://gpu-box:8080/v1"\ntimeout = 2\n')
    m = load_config(with_roots=False).model
    assert (m.documents.url, m.documents.name, m.documents.api_key_env, m.documents.timeout, m.batch) == \
        ("http://localhost:11434/v1", "nomic-embed-text", "EMBED_KEY", 12.5, 64)
    assert (m.query_prefix, m.document_prefix) == ("search_query: ", "search_document: ")
    # the query server inherits the model name and key variable unless it names its own
    assert (m.queries.url, m.queries.name, m.queries.api_key_env, m.queries.timeout) == \
        ("http://gpu-box:8080/v1", "nomic-embed-text", "EMBED_KEY", 2.0)


@pytest.mark.parametrize("text, param, words", [
    ('[model]\nurl = "localhost:11434"\n', "model.url", "http:// or https:// URL"),
    ('[model]\nurl = "https://user:sk-live-123@api.example.com/v1"\n', "model.url", "holds credentials"),
    ('[model]\nurl = "http://h/v1"\npath = "/tmp"\n', "model.path", "name two models"),
    ('[model]\nurl = "http://h/v1"\ncompute = "int8"\n', "model.compute", "name two models"),
    ('[model]\nname = "nomic"\n', "model.name", "belongs to an embedding server's url"),
    ('[model]\nurl = "http://h/v1"\nbatch = 0\n', "model.batch", "from 1 to 2048"),
    ('[model]\nurl = "http://h/v1"\ntimeout = "soon"\n', "model.timeout", "seconds"),
    ('[model.query]\nurl = "http://h/v1"\n', "model.url", "needs the document server"),
    ('[model]\nurl = "http://h/v1"\n[model.query]\nurl = "http://q/v1"\nbatch = 2\n', "model.query", "unknown: batch"),
    ('[rerank]\ntop = 5\n', "rerank", "one of path"),
    ('[rerank]\npath = "/no/such/folder"\n', "rerank.path", "is not a folder"),
    ('[rerank]\nurl = "http://h"\ntop = 1\n', "rerank.top", "from 2 to 200"),
    ('[rerank]\nurl = "http://h"\nbudget_ms = 5\n', "rerank.budget_ms", "from 10 to 60000"),
])
def test_a_wrong_server_or_reranker_setting_is_named(env, text, param, words):
    write_config(env, text)
    with pytest.raises(UserError) as e:
        load_config(with_roots=False)
    assert e.value.param == param and words in e.value.message, (e.value.param, e.value.message)


def test_a_key_written_where_its_variable_belongs_is_refused_and_not_echoed(env):
    write_config(env, '[model]\nurl = "http://h/v1"\napi_key_env = "sk-proj-Zx9aB3cD4eF5"\n')
    with pytest.raises(UserError) as e:
        load_config(with_roots=False)
    assert e.value.param == "model.api_key_env" and "sk-proj" not in str(e.value.to_dict())
    write_config(env, '[model]\nurl = "https://u:sk-live-123@h/v1"\n')
    with pytest.raises(UserError) as e:
        load_config(with_roots=False)
    assert "sk-live-123" not in str(e.value.to_dict())


def test_a_project_with_sessions_in_both_default_projects_folders_gets_both(env, monkeypatch):
    """`~/.claude/projects/<slug>` and `~/.config/claude/projects/<slug>`: Claude Code may have written
    to either; the project's conversations are both folders, not the first one found. The nearest
    project folder with any is the project's (a parent's sessions are not added to a child's)."""
    home = env / "home"
    project = home / "code" / "app"
    (project / "src").mkdir(parents=True)
    slug = cfgmod.project_slug(project)
    old, new = home / ".claude" / "projects" / slug, home / ".config" / "claude" / "projects" / slug
    parent = home / ".claude" / "projects" / cfgmod.project_slug(home / "code")
    for folder in (old, new, parent):
        folder.mkdir(parents=True)
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    monkeypatch.chdir(project / "src")
    cfg = load_config(["~/notes"])
    assert sorted(r.path for r in cfg.conversations) == sorted([old.resolve(), new.resolve()])
    assert cfg.finds_conversations and len({r.name for r in cfg.conversations}) == 2
    assert cfgmod.claude_folders(home / "code") == [parent.resolve()]
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", f"{home / '.claude'}, {home / '.config' / 'claude'}")
    assert sorted(cfgmod.claude_folders(project)) == sorted([old.resolve(), new.resolve()])
