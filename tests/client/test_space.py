"""The space (container tag) of a folder, on real git repositories made in a temporary folder.

Every repository case is checked twice: against the exact tag the vendor's plugin computed, where known,
and against what `git` itself answers (`rev-parse` + `remote get-url origin`, the vendor plugin's way),
so reading git's files is proven to give git's answer.
"""

from __future__ import annotations

import ast
import graphlib
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bli_memory import space
from bli_memory.settings import Settings
from bli_memory.space.tag import sanitise_name
from tests.helpers import sibling_imports

TEST_VECTOR_REMOTE = "git@github.com:acme/Example.Project.git"
TEST_VECTOR_TAG = "repo_example_project__7e5af63ec82f04d5"
BIN = Path(sys.executable).with_name("bli-memory-mcp")


def sha16(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A git environment that sees only what a test writes: temp HOME, no system config."""
    home = tmp_path / "home"
    home.mkdir()
    clean = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("GIT_", "BLI_MEMORY_")) and key != "XDG_CONFIG_HOME"
    }
    clean.update(
        HOME=str(home),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CEILING_DIRECTORIES=str(tmp_path),
        GIT_AUTHOR_NAME="test",
        GIT_AUTHOR_EMAIL="test@example.invalid",
        GIT_COMMITTER_NAME="test",
        GIT_COMMITTER_EMAIL="test@example.invalid",
    )
    return clean


def git(env: dict[str, str], cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def make_repo(env: dict[str, str], path: Path, remote: str | None = None, *, commit: bool = False) -> Path:
    path.mkdir(parents=True)
    git(env, path, "init", "-q", "-b", "main")
    if remote is not None:
        git(env, path, "remote", "add", "origin", remote)
    if commit:
        git(env, path, "commit", "-q", "--allow-empty", "-m", "start")
    return path


def git_tag(folder: Path, env: dict[str, str], *, isolate: bool = False) -> str:
    """The tag computed from git's own answers, the way the vendor plugin asked."""
    run = lambda *a: subprocess.run(["git", "-C", str(folder), *a], env=env, capture_output=True, text=True)  # noqa: E731
    real = os.path.realpath(folder)
    facts = run("rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir", "--show-toplevel")
    if facts.returncode != 0:
        return f"dir_{sanitise_name(os.path.basename(real))}__{sha16('path:' + real)}"
    git_dir, common, top = facts.stdout.splitlines()[:3]
    main_root = top if git_dir == common else common.removesuffix("/.git")
    root = top if isolate else main_root
    remote = run("remote", "get-url", "origin")
    if remote.returncode != 0:
        return f"repo_{sanitise_name(os.path.basename(root))}__{sha16('path:' + root)}"
    url = remote.stdout.strip()
    name = space.remote_name(url, fallback=os.path.basename(main_root))
    identity = "path:" + top if isolate else space.normalise_remote(url, base_dir=main_root)
    return f"repo_{name}__{sha16(identity)}"


def assert_same_as_git(folder: Path, env: dict[str, str], *, isolate: bool = False) -> str:
    ours = space.container_tag(str(folder), isolate_worktrees=isolate, env=env)
    assert ours == git_tag(folder, env, isolate=isolate)
    return ours


# --- normalisation (pure) ------------------------------------------------------------------------


def test_test_vector_normalises_as_design_says() -> None:
    assert space.normalise_remote(TEST_VECTOR_REMOTE, base_dir="/x") == "github.com/acme/example.project"
    assert space.remote_name(TEST_VECTOR_REMOTE, fallback="x") == "example_project"


@pytest.mark.parametrize(
    ("remote", "expected"),
    [
        ("https://github.com/acme/Example.Project.git", "github.com/acme/example.project"),
        ("https://GitHub.COM/acme/Example.Project.GIT/", "github.com/acme/example.project"),
        ("https://user:token@github.com/acme/Example.Project.git", "github.com/acme/example.project"),
        ("https://github.com:443/acme/Example.Project.git", "github.com/acme/example.project"),
        ("http://github.com:80/acme/Example.Project.git", "github.com/acme/example.project"),
        ("ssh://git@github.com/acme/Example.Project.git", "github.com/acme/example.project"),
        ("ssh://git@github.com:22/acme/Example.Project.git", "github.com:22/acme/example.project"),
        ("https://github.com:8443/acme/x.git", "github.com:8443/acme/x"),
        ("https://github.com:0443/acme/x.git", "github.com/acme/x"),
        ("git://host.example//a//b.git", "host.example/a/b"),
        ("https://host/acme/x.git?ref=main#frag", "host/acme/x"),
        ("https://host/a b/./c/../x.git", "host/a%20b/x"),
        ("https://[::1]:8080/x.git", "[::1]:8080/x"),
        ("git@github.com:/abs/x.git", "github.com/abs/x"),
        ("github.com:acme/x", "github.com/acme/x"),
        ("file:///srv/Repos/My%20Project.git", "file:/srv/repos/my project"),
        ("/srv/Repos/x.git/", "file:/srv/repos/x"),
        ("../Sibling.git", "file:/work/sibling"),
        ("./x", "file:/work/repo/x"),
    ],
)
def test_remote_forms_normalise(remote: str, expected: str) -> None:
    assert space.normalise_remote(remote, base_dir="/work/repo") == expected


@pytest.mark.parametrize(
    ("remote", "name"),
    [
        ("git@github.com:acme/Example.Project.git", "example_project"),
        ("https://host/acme/My--Repo__.git/", "my_repo"),
        ("host:repo", "repo"),
        ("https://host/", "host"),
        ("https://host/" + "Ab" * 50, "ab" * 36),
        ("https://host/-.-", "unknown"),
    ],
)
def test_names_come_from_the_last_segment(remote: str, name: str) -> None:
    assert space.remote_name(remote, fallback="fallback") == name


def test_a_remote_ending_in_a_slash_only_falls_back_to_the_folder_name() -> None:
    assert space.remote_name("/", fallback="My Folder") == "my_folder"


# --- real repositories --------------------------------------------------------------------------


def test_test_vector_on_a_real_repository(tmp_path: Path, env: dict[str, str]) -> None:
    repo = make_repo(env, tmp_path / "checkout", TEST_VECTOR_REMOTE)
    assert assert_same_as_git(repo, env) == TEST_VECTOR_TAG
    (repo / "src" / "deep").mkdir(parents=True)
    assert assert_same_as_git(repo / "src" / "deep", env) == TEST_VECTOR_TAG


@pytest.mark.parametrize(
    "remote",
    [
        "https://github.com/acme/Example.Project.git",
        "https://github.com/acme/Example.Project",
        "https://github.com/acme/Example.Project.git/",
        "ssh://git@github.com/acme/Example.Project.git",
        "https://x-access-token:ghp_secret@github.com/acme/Example.Project.git",
        "https://github.com:443/acme/Example.Project.git",
        "git@GitHub.com:acme/Example.Project.git",
    ],
)
def test_every_form_of_one_repository_shares_the_test_vector_space(
    tmp_path: Path, env: dict[str, str], remote: str
) -> None:
    repo = make_repo(env, tmp_path / "r", remote)
    assert assert_same_as_git(repo, env) == TEST_VECTOR_TAG


@pytest.mark.parametrize(
    "remote",
    ["ssh://git@github.com:22/acme/Example.Project.git", "https://github.com:8443/acme/Example.Project.git"],
)
def test_a_non_default_port_is_a_different_space(tmp_path: Path, env: dict[str, str], remote: str) -> None:
    repo = make_repo(env, tmp_path / "r", remote)
    tag = assert_same_as_git(repo, env)
    assert tag.startswith("repo_example_project__")
    assert tag != TEST_VECTOR_TAG


def test_a_credential_never_reaches_the_identity(tmp_path: Path, env: dict[str, str]) -> None:
    repo = make_repo(env, tmp_path / "r", "https://bot:s3cr3t-token@git.example.com/team/app.git?x=tok")
    found = space.space_of(str(repo), env=env)
    assert found.kind == space.KIND_REMOTE
    assert found.identity == "git.example.com/team/app"


def test_a_local_path_remote_is_anchored_at_the_repository_root(tmp_path: Path, env: dict[str, str]) -> None:
    repo = make_repo(env, tmp_path / "r", "../upstream.git")
    (repo / "sub").mkdir()
    tag = assert_same_as_git(repo / "sub", env)
    assert tag == f"repo_upstream__{sha16('file:' + str(tmp_path / 'upstream').lower())}"


def test_no_remote_hashes_the_main_root(tmp_path: Path, env: dict[str, str]) -> None:
    repo = make_repo(env, tmp_path / "My Repo")
    (repo / "a").mkdir()
    tag = assert_same_as_git(repo / "a", env)
    assert tag == f"repo_my_repo__{sha16('path:' + os.path.realpath(repo))}"


def test_a_remote_not_named_origin_does_not_count(tmp_path: Path, env: dict[str, str]) -> None:
    repo = make_repo(env, tmp_path / "r")
    git(env, repo, "remote", "add", "upstream", TEST_VECTOR_REMOTE)
    assert assert_same_as_git(repo, env) == f"repo_r__{sha16('path:' + str(repo))}"


def test_the_first_of_several_origin_urls_is_the_one(tmp_path: Path, env: dict[str, str]) -> None:
    repo = make_repo(env, tmp_path / "r", TEST_VECTOR_REMOTE)
    git(env, repo, "remote", "set-url", "--add", "origin", "https://other.example/x.git")
    assert assert_same_as_git(repo, env) == TEST_VECTOR_TAG


def test_an_origin_only_in_the_user_config_is_no_remote_to_git(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "home" / ".gitconfig").write_text(f'[remote "origin"]\n\turl = {TEST_VECTOR_REMOTE}\n')
    repo = make_repo(env, tmp_path / "r")
    assert assert_same_as_git(repo, env) == f"repo_r__{sha16('path:' + str(repo))}"


def test_a_folder_outside_git_gets_a_dir_space(tmp_path: Path, env: dict[str, str]) -> None:
    folder = tmp_path / "Notes.Folder"
    folder.mkdir()
    tag = assert_same_as_git(folder, env)
    assert tag == f"dir_notes_folder__{sha16('path:' + str(folder))}"
    assert space.space_of(str(folder), env=env).kind == space.KIND_FOLDER


def test_a_symlinked_folder_has_the_space_of_its_target(tmp_path: Path, env: dict[str, str]) -> None:
    repo = make_repo(env, tmp_path / "r")
    (tmp_path / "link").symlink_to(repo)
    assert assert_same_as_git(tmp_path / "link", env) == space.container_tag(str(repo), env=env)


def test_a_bare_repository_uses_its_origin(tmp_path: Path, env: dict[str, str]) -> None:
    bare = tmp_path / "bare.git"
    bare.mkdir()
    git(env, bare, "init", "-q", "--bare")
    git(env, bare, "remote", "add", "origin", TEST_VECTOR_REMOTE)
    assert space.container_tag(str(bare), env=env) == TEST_VECTOR_TAG


def test_a_broken_dot_git_file_means_outside_git(tmp_path: Path, env: dict[str, str]) -> None:
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / ".git").write_text("gitdir: /nonexistent/place\n")
    assert assert_same_as_git(folder, env).startswith("dir_f__")


def test_a_malformed_config_means_outside_git_as_for_git(tmp_path: Path, env: dict[str, str]) -> None:
    repo = make_repo(env, tmp_path / "r", TEST_VECTOR_REMOTE)
    with (repo / ".git" / "config").open("a") as handle:
        handle.write('[remote "origin"\n')
    assert assert_same_as_git(repo, env).startswith("dir_r__")


def test_a_non_directory_is_refused(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(NotADirectoryError):
        space.container_tag(str(tmp_path / "file.txt"), env=env)
    with pytest.raises(NotADirectoryError):
        space.container_tag(str(tmp_path / "missing"), env=env)


# --- worktrees ----------------------------------------------------------------------------------


def test_linked_worktrees_share_the_main_repository_space(tmp_path: Path, env: dict[str, str]) -> None:
    main = make_repo(env, tmp_path / "main", TEST_VECTOR_REMOTE, commit=True)
    git(env, main, "worktree", "add", "-q", str(tmp_path / "elsewhere" / "wt"))
    linked = tmp_path / "elsewhere" / "wt"
    assert assert_same_as_git(linked, env) == TEST_VECTOR_TAG
    isolated = assert_same_as_git(linked, env, isolate=True)
    assert isolated == f"repo_example_project__{sha16('path:' + str(linked))}"
    assert assert_same_as_git(main, env, isolate=True) != isolated


def test_worktrees_without_origin_share_the_main_root(tmp_path: Path, env: dict[str, str]) -> None:
    main = make_repo(env, tmp_path / "Main", commit=True)
    git(env, main, "worktree", "add", "-q", str(tmp_path / "wt"))
    expected = f"repo_main__{sha16('path:' + str(main))}"
    assert assert_same_as_git(tmp_path / "wt", env) == expected
    assert assert_same_as_git(main, env) == expected
    assert (
        assert_same_as_git(tmp_path / "wt", env, isolate=True)
        == f"repo_wt__{sha16('path:' + str(tmp_path / 'wt'))}"
    )


def test_a_worktree_config_origin_is_read_when_enabled(tmp_path: Path, env: dict[str, str]) -> None:
    main = make_repo(env, tmp_path / "main", commit=True)
    git(env, main, "config", "extensions.worktreeConfig", "true")
    git(env, main, "worktree", "add", "-q", str(tmp_path / "wt"))
    git(env, tmp_path / "wt", "config", "--worktree", "remote.origin.url", TEST_VECTOR_REMOTE)
    assert assert_same_as_git(tmp_path / "wt", env) == TEST_VECTOR_TAG
    assert assert_same_as_git(main, env).startswith("repo_main__")


def test_a_submodule_has_the_space_of_its_own_origin(tmp_path: Path, env: dict[str, str]) -> None:
    library = make_repo(env, tmp_path / "Lib", commit=True)
    app = make_repo(env, tmp_path / "app", TEST_VECTOR_REMOTE, commit=True)
    git(env, app, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(library), "vendor/lib")
    assert (
        assert_same_as_git(app / "vendor" / "lib", env)
        == f"repo_lib__{sha16('file:' + str(library).lower())}"
    )
    assert assert_same_as_git(app / "vendor", env) == TEST_VECTOR_TAG


# --- insteadOf and config syntax ---------------------------------------------------------------


def test_a_repository_insteadof_rewrite_is_honoured(tmp_path: Path, env: dict[str, str]) -> None:
    repo = make_repo(env, tmp_path / "r", "gh:acme/Example.Project.git")
    git(env, repo, "config", "url.git@github.com:.insteadOf", "gh:")
    assert assert_same_as_git(repo, env) == TEST_VECTOR_TAG


def test_a_user_insteadof_rewrite_reaches_linked_worktrees(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "home" / ".gitconfig").write_text('[url "https://github.com/"]\n\tinsteadOf = work:\n')
    main = make_repo(env, tmp_path / "main", "work:acme/Example.Project.git", commit=True)
    git(env, main, "worktree", "add", "-q", str(tmp_path / "wt"))
    assert assert_same_as_git(tmp_path / "wt", env) == TEST_VECTOR_TAG


def test_the_longest_insteadof_prefix_wins(tmp_path: Path, env: dict[str, str]) -> None:
    repo = make_repo(env, tmp_path / "r", "co:acme/Example.Project.git")
    git(env, repo, "config", "url.https://wrong.example/.insteadOf", "co:")
    git(env, repo, "config", "url.git@github.com:.insteadOf", "co:acme/")
    git(env, repo, "config", "--add", "url.git@github.com:acme/.insteadOf", "co:acme/")
    assert assert_same_as_git(repo, env) == "repo_example_project__" + sha16("github.com/example.project")


def test_an_xdg_config_rewrite_is_honoured(tmp_path: Path, env: dict[str, str]) -> None:
    xdg = tmp_path / "xdg"
    (xdg / "git").mkdir(parents=True)
    (xdg / "git" / "config").write_text('[url "git@github.com:"]\n  insteadOf = x:\n')
    env["XDG_CONFIG_HOME"] = str(xdg)
    repo = make_repo(env, tmp_path / "r", "x:acme/Example.Project.git")
    assert assert_same_as_git(repo, env) == TEST_VECTOR_TAG


def test_environment_config_rewrites_are_honoured(tmp_path: Path, env: dict[str, str]) -> None:
    repo = make_repo(env, tmp_path / "r", "e:acme/Example.Project.git")
    env.update(
        GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="url.git@github.com:.insteadOf", GIT_CONFIG_VALUE_0="e:"
    )
    assert assert_same_as_git(repo, env) == TEST_VECTOR_TAG
    del env["GIT_CONFIG_COUNT"]
    env["GIT_CONFIG_PARAMETERS"] = "'url.git@github.com:.insteadof'='e:'"
    assert assert_same_as_git(repo, env) == TEST_VECTOR_TAG


def test_config_values_follow_git_syntax(tmp_path: Path, env: dict[str, str]) -> None:
    repo = make_repo(env, tmp_path / "r")
    with (repo / ".git" / "config").open("a") as handle:
        handle.write(
            '[Remote "origin"] fetch = +refs/heads/*:refs/remotes/origin/*\n'
            '\tURL = "git@github.com:acme/"\\\nExample.Project.git  ; a comment\n'
            '# [remote "origin"]\n#\turl = https://ignored.example/x.git\n'
        )
    assert assert_same_as_git(repo, env) == TEST_VECTOR_TAG


def test_included_files_and_conditions_are_followed(tmp_path: Path, env: dict[str, str]) -> None:
    home = tmp_path / "home"
    (home / "inc").mkdir()
    (home / ".gitconfig").write_text(
        "[include]\n\tpath = inc/plain\n"
        f'[includeIf "gitdir:{os.path.realpath(tmp_path)}/work/"]\n\tpath = ~/inc/gitdir\n'
        '[includeIf "onbranch:feature/**"]\n\tpath = inc/branch\n'
        '[includeIf "hasconfig:remote.*.url:hc:acme/**"]\n\tpath = inc/hasconfig\n'
    )
    (home / "inc" / "plain").write_text('[url "git@github.com:"]\n\tinsteadOf = p:\n')
    (home / "inc" / "gitdir").write_text('[url "git@github.com:"]\n\tinsteadOf = g:\n')
    (home / "inc" / "branch").write_text('[url "git@github.com:"]\n\tinsteadOf = b:\n')
    (home / "inc" / "hasconfig").write_text('[url "git@github.com:"]\n\tinsteadOf = hc:\n')
    for prefix, folder, expected_rewrite in [
        ("p:", "work/plain", True),
        ("g:", "work/gitdir", True),
        ("g:", "other/gitdir", False),
        ("b:", "work/branch", False),
        ("hc:", "other/hasconfig", True),
    ]:
        repo = make_repo(env, tmp_path / folder, prefix + "acme/Example.Project.git")
        tag = assert_same_as_git(repo, env)
        assert (tag == TEST_VECTOR_TAG) is expected_rewrite, (prefix, folder, tag)
    git(env, tmp_path / "work" / "branch", "checkout", "-q", "-b", "feature/x")
    assert assert_same_as_git(tmp_path / "work" / "branch", env) == TEST_VECTOR_TAG


# --- resolve_space ------------------------------------------------------------------------------


def settings(tag: str | None = None, isolate: bool = False) -> Settings:
    return Settings(None, None, tag, isolate, True)


def test_the_environment_override_wins(tmp_path: Path, env: dict[str, str]) -> None:
    repo = make_repo(env, tmp_path / "r", TEST_VECTOR_REMOTE)
    assert space.resolve_space(settings("my_space"), str(repo)) == "my_space"
    assert space.resolve_space_of(settings(), str(repo), env).tag == TEST_VECTOR_TAG


def test_resolve_space_honours_isolation(tmp_path: Path, env: dict[str, str]) -> None:
    repo = make_repo(env, tmp_path / "r", TEST_VECTOR_REMOTE)
    found = space.resolve_space_of(settings(isolate=True), str(repo), env)
    assert found.tag == f"repo_example_project__{sha16('path:' + str(repo))}"


def test_a_vanished_folder_still_gets_a_space(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    assert space.resolve_space(settings(), str(gone)) == f"dir_gone__{sha16('path:' + str(gone))}"


# --- the `space` command ------------------------------------------------------------------------


def run_cli(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=30)


def test_space_command_prints_the_tag(tmp_path: Path, env: dict[str, str]) -> None:
    repo = make_repo(env, tmp_path / "r", TEST_VECTOR_REMOTE)
    done = run_cli(env, "space", str(repo))
    assert (done.returncode, done.stdout, done.stderr) == (0, TEST_VECTOR_TAG + "\n", "")
    assert run_cli(env, "space", cwd=repo).stdout == TEST_VECTOR_TAG + "\n"


def test_space_command_json_says_how(tmp_path: Path, env: dict[str, str]) -> None:
    repo = make_repo(env, tmp_path / "r", "https://u:secret@github.com/acme/Example.Project.git")
    done = run_cli(env, "space", "--json", str(repo))
    assert done.returncode == 0
    body = json.loads(done.stdout)
    assert body == {
        "tag": TEST_VECTOR_TAG,
        "kind": "remote",
        "identity": "github.com/acme/example.project",
        "path": str(repo),
        "isolateWorktrees": False,
    }
    assert "secret" not in done.stdout


def test_space_command_honours_the_environment(tmp_path: Path, env: dict[str, str]) -> None:
    main = make_repo(env, tmp_path / "main", TEST_VECTOR_REMOTE, commit=True)
    git(env, main, "worktree", "add", "-q", str(tmp_path / "wt"))
    isolated = run_cli({**env, "BLI_MEMORY_ISOLATE_WORKTREES": "1"}, "space", str(tmp_path / "wt"))
    assert isolated.stdout.strip() == f"repo_example_project__{sha16('path:' + str(tmp_path / 'wt'))}"
    forced = run_cli({**env, "BLI_MEMORY_CONTAINER_TAG": "team_space"}, "space", "--json", str(main))
    assert json.loads(forced.stdout)["kind"] == "override"
    assert json.loads(forced.stdout)["tag"] == "team_space"


@pytest.mark.parametrize("args", [["space", "/no/such/folder"], ["space", "--bogus"], ["space", "a", "b"]])
def test_space_command_refuses_bad_input_in_one_line(env: dict[str, str], args: list[str]) -> None:
    done = run_cli(env, *args)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("bli-memory-mcp space: ")


def test_space_command_refuses_a_file(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "f.txt").write_text("x")
    done = run_cli(env, "space", str(tmp_path / "f.txt"))
    assert done.returncode == 2 and "not a directory" in done.stderr


def test_space_command_has_help(env: dict[str, str]) -> None:
    done = run_cli(env, "space", "--help")
    assert done.returncode == 0
    assert "usage: bli-memory-mcp space [PATH] [--json]" in done.stdout
    assert "BLI_MEMORY_CONTAINER_TAG" in done.stdout


def test_computing_a_space_imports_nothing_the_hook_path_forbids(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "home" / ".gitconfig").write_text('[includeIf "gitdir:/"]\n\tpath = x\n')
    repo = make_repo(env, tmp_path / "r", TEST_VECTOR_REMOTE)
    forbidden = "mcp asyncio argparse urllib.request http.client email subprocess logging uuid hashlib"
    probe = (
        "import sys\nfrom bli_memory import space\nfrom bli_memory.settings import load_settings\n"
        f"print(space.resolve_space(load_settings(), {str(repo)!r}))\n"
        f"print(sorted(set({forbidden.split()!r}) & set(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == [TEST_VECTOR_TAG, "[]"]


PACKAGE_ROOT = Path(space.__file__).resolve().parent


def test_the_space_package_has_one_job_per_module_and_its_imports_point_one_way() -> None:
    graph = sibling_imports(PACKAGE_ROOT, "bli_memory.space")
    assert set(graph) == {"tag", "discovery", "gitconfig", "origin", "remote"}
    assert all("__init__" not in siblings for siblings in graph.values())  # the package only re-exports
    order = list(graphlib.TopologicalSorter(graph).static_order())  # raises CycleError on a cycle
    assert order[-1] == "tag"  # the tag is computed from all the others, and nothing needs it
    assert graph["remote"] == set() and graph["discovery"] == set()  # string work; git's files
    for module in PACKAGE_ROOT.glob("*.py"):
        doc = ast.get_docstring(ast.parse(module.read_text()))
        assert doc and doc.splitlines()[0].endswith("."), module.name  # a one-line summary of its job
