# Every test's settings unless a run says otherwise: fake artifacts (64-byte arm64 ELF headers,
# infra/fake-artifacts.py), so the functions plan without a Rust build.
lambda_asset_dir = "tests/artifacts/arm64"
