# Nix derivation for retry (github.com/retry-runner/retry), built from this
# checkout with nixpkgs' Rust (Cargo.lock as committed, so no vendor hash).
# Named retry-runner, as the crate is: nixpkgs' own `retry` (a different
# tool, with other flags) also provides bin/retry. Build it with
#
#   nix-build packaging/nix
#
# For nixpkgs itself, `src` becomes the release tag:
#   src = fetchFromGitHub { owner = "retry-runner"; repo = "retry";
#     rev = "v${version}"; hash = "..."; };
# tests/integration/packaging.rs checks the version, licence and names
# against Cargo.toml.
{
  lib,
  rustPlatform,
  installShellFiles,
}:

rustPlatform.buildRustPackage rec {
  pname = "retry-runner";
  version = "0.1.0";

  src = lib.cleanSourceWith {
    src = lib.cleanSource ../..;
    filter = path: type: !(lib.hasPrefix (toString ../../target) path);
  };
  cargoLock.lockFile = ../../Cargo.lock;

  nativeBuildInputs = [ installShellFiles ];

  # The end-to-end suite drives curl, wget, git, redis-server and real
  # signals, which the build sandbox has not: the library's unit tests run.
  cargoTestFlags = [ "--lib" ];

  postInstall = ''
    installManPage man/retry.1
    installShellCompletion --cmd retry \
      --bash completions/retry.bash \
      --zsh completions/_retry \
      --fish completions/retry.fish
  '';

  meta = {
    description = "Run a command until it succeeds: backoff with jitter, exit-code and output rules";
    homepage = "https://github.com/retry-runner/retry";
    changelog = "https://github.com/retry-runner/retry/blob/v${version}/CHANGELOG.md";
    license = with lib.licenses; [
      mit
      asl20
    ];
    mainProgram = "retry";
    platforms = lib.platforms.linux ++ lib.platforms.darwin ++ lib.platforms.freebsd;
  };
}
