"""SkillRegistry: Agent Skills rules, lenient loading, sources, catalog budget."""

from __future__ import annotations

from pathlib import Path

from tests.support.config_ws import codes, load, only, skill_file, write

from bearagent.domain.specs import SkillSpec
from bearagent.registries.skills import build_catalog


def test_skill_folders_from_all_sources_with_precedence(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = tmp_path / "ws"
    write(root, ".bearagent/skills/pdf/SKILL.md", skill_file("pdf", "workspace pdf"))
    write(root, ".claude/skills/pdf/SKILL.md", skill_file("pdf", "claude pdf"))
    write(root, ".claude/skills/deploy/SKILL.md", skill_file("deploy", "claude deploy"))
    write(root, ".agents/skills/deploy/SKILL.md", skill_file("deploy", "agents deploy"))
    write(root, ".agents/skills/lint/SKILL.md", skill_file("lint", "agents lint"))
    write(home, "bearagent/skills/lint/SKILL.md", skill_file("lint", "user lint"))
    ws = load(root, home)
    assert ws.skills.get("pdf") and ws.skills.get("pdf").description == "workspace pdf"  # type: ignore[union-attr]
    deploy = ws.skills.resolved("deploy")
    assert (
        deploy
        and deploy.source.id == "compat:.claude/skills"
        and [c.source.id for c in deploy.shadows] == ["compat:.agents/skills"]
    )
    lint = ws.skills.resolved("lint")
    assert lint and lint.source.id == "compat:.agents/skills" and [c.source.id for c in lint.shadows] == ["user"]
    assert "code-review" in ws.skills.names()  # built-in


def test_bundled_files_are_listed_not_read(tmp_path: Path) -> None:
    write(tmp_path, ".bearagent/skills/doc/SKILL.md", skill_file("doc"))
    write(tmp_path, ".bearagent/skills/doc/reference/api.md", "x")
    write(tmp_path, ".bearagent/skills/doc/scripts/run.py", "print(1)")
    ws = load(tmp_path, tmp_path / "home")
    skill = ws.skills.get("doc")
    assert skill is not None and skill.files == ("reference/api.md", "scripts/run.py")


def test_name_must_equal_folder_lenient(tmp_path: Path) -> None:
    write(tmp_path, ".bearagent/skills/real-name/SKILL.md", skill_file("other-name"))
    ws = load(tmp_path, tmp_path / "home")
    d = only(ws.skills.diagnostics, "skill.name_mismatch")
    assert d.severity == "warning" and "'other-name'" in d.message and "'real-name'" in d.message and d.line == 2
    assert ws.skills.get("real-name") is not None


def test_invalid_skill_name_is_a_warning(tmp_path: Path) -> None:
    write(tmp_path, ".bearagent/skills/Bad--Name/SKILL.md", skill_file("Bad--Name"))
    ws = load(tmp_path, tmp_path / "home")
    assert "skill.invalid_name" in codes(ws.skills.diagnostics)


def test_missing_description_skips_and_long_description_warns(tmp_path: Path) -> None:
    write(tmp_path, ".bearagent/skills/nodesc/SKILL.md", "---\nname: nodesc\n---\nbody\n")
    write(tmp_path, ".bearagent/skills/long/SKILL.md", skill_file("long", "x" * 1100))
    ws = load(tmp_path, tmp_path / "home")
    d = only(ws.skills.diagnostics, "skill.missing_description")
    assert d.severity == "error" and "1-1024" in (d.fix or "")
    assert ws.skills.get("nodesc") is None
    assert "skill.description_too_long" in codes(ws.skills.diagnostics) and ws.skills.get("long") is not None


def test_folder_without_skill_md_and_loose_md_are_reported(tmp_path: Path) -> None:
    write(tmp_path, ".claude/skills/oops/README.md", "# x")
    write(tmp_path, ".claude/skills/loose.md", skill_file("loose"))
    write(tmp_path, ".claude/skills/lower/skill.md", skill_file("lower"))
    ws = load(tmp_path, tmp_path / "home")
    missing = only(ws.skills.diagnostics, "skill.missing_skill_md")
    assert "oops" in missing.message and "SKILL.md" in (missing.fix or "")
    assert "skill.not_in_folder" in codes(ws.skills.diagnostics)
    assert ws.skills.get("lower") is not None  # skill.md accepted like skills-ref


def test_optional_fields_and_claude_extensions(tmp_path: Path) -> None:
    write(
        tmp_path,
        ".bearagent/skills/full/SKILL.md",
        "---\nname: full\ndescription: d\nlicense: MIT\ncompatibility: needs git\nmetadata: {author: me}\nallowed-tools: Read Grep\n"
        "disable-model-invocation: true\ncontext: fork\nlicence: x\n---\nbody\n",
    )
    ws = load(tmp_path, tmp_path / "home")
    s = ws.skills.get("full")
    assert (
        s is not None and s.license == "MIT" and s.metadata == {"author": "me"} and s.allowed_tools == ("Read", "Grep")
    )
    assert not s.model_invocable  # disable-model-invocation is read
    assert "skill.unsupported_key" in codes(ws.skills.diagnostics)  # `context: fork` is not
    unknown = only(ws.skills.diagnostics, "config.unknown_key")
    assert "did you mean 'license'" in unknown.message


def _skill(name: str, desc: str) -> SkillSpec:
    return SkillSpec(name=name, description=desc)


def test_catalog_within_budget_has_everything() -> None:
    cat = build_catalog([_skill("a", "alpha"), _skill("b", "beta")], 10_000)
    assert "<name>a</name><description>alpha</description>" in cat.text and not cat.truncated


def test_catalog_over_budget_drops_descriptions_visibly_then_skills() -> None:
    skills = [_skill(f"s{i}", "d" * 100) for i in range(5)]
    full = build_catalog(skills, 100_000)
    cat = build_catalog(skills, len(full.text) - 50)
    assert cat.dropped_descriptions == ("s4",) and cat.dropped_skills == ()
    assert len(cat.text) <= len(full.text) - 50 and "<skill><name>s4</name></skill>" in cat.text
    tiny = build_catalog(skills, 120)
    assert tiny.dropped_skills and len(tiny.text) <= 120
    assert set(tiny.dropped_skills) | set(tiny.included) == {s.name for s in skills}


def test_registry_catalog_respects_allowlist(tmp_path: Path) -> None:
    write(tmp_path, ".bearagent/skills/one/SKILL.md", skill_file("one"))
    ws = load(tmp_path, tmp_path / "home")
    cat = ws.skills.catalog(["one"], budget_chars=1000)
    assert cat.included == ("one",)
