import json

from tdebench.measure.environment import CRYPTO_FLAGS, cpu_flags, cpu_model, snapshot

X86 = """processor\t: 0
model name\t: Example CPU @ 3.00GHz
flags\t\t: fpu sse2 aes pclmulqdq avx2 sha_ni
"""
ARM = """processor\t: 0
Features\t: fp asimd aes pmull sha2
"""


def test_cpu_flags_from_x86_cpuinfo():
    flags = cpu_flags(X86)
    assert list(flags) == list(CRYPTO_FLAGS)
    assert flags == {"aes": True, "vaes": False, "pclmulqdq": True, "vpclmulqdq": False,
                     "sha_ni": True, "avx2": True, "avx512f": False}


def test_cpu_flags_from_arm_cpuinfo_and_model_fallback():
    assert cpu_flags(ARM)["aes"] is True
    assert cpu_model(X86) == "Example CPU @ 3.00GHz"
    assert cpu_model(ARM)  # falls back to platform.processor() or "unknown"


def test_cpu_flags_of_this_machine_are_booleans():
    assert set(cpu_flags().values()) <= {True, False}


def test_snapshot_has_every_key_and_is_json(tmp_path):
    env = snapshot({"duckdb": "v1.5.5"}, tmp_path)
    for key in ("hostname", "timestamp_utc", "cpu_model", "cpu_flags", "logical_cores", "physical_cores",
                "memory_bytes", "kernel", "os", "python", "packages", "engines", "filesystem"):
        assert key in env, key
    assert env["engines"] == {"duckdb": "v1.5.5"}
    assert env["packages"]["numpy"] and env["packages"]["cryptography"]
    for name in ("duckdb", "apsw-sqlite3mc", "sqlglot", "scipy"):
        assert name in env["packages"]
    assert env["memory_bytes"] > 0 and env["logical_cores"] >= 1
    assert env["timestamp_utc"].endswith("+00:00")
    assert env["filesystem"]
    assert json.loads(json.dumps(env)) == env


def test_snapshot_without_directory():
    assert snapshot({})["filesystem"] is None
