# Homebrew formula for retry (github.com/retry-runner/retry), built from the
# source of a release tag. Named retry-runner, as the crate is: Homebrew's
# own formula `retry` (a different tool, with other flags) installs a
# `retry` binary too, so this one declares the conflict and Homebrew refuses
# to link both (`brew unlink retry` first).
#
# At a release: set the version in `url` and replace the placeholder
# SHA-256 (all zeros) with that tarball's (packaging/README.md). tests/integration/packaging.rs checks the version,
# licence and names against Cargo.toml.
class RetryRunner < Formula
  desc "Run a command until it succeeds: backoff with jitter, exit-code and output rules"
  homepage "https://github.com/retry-runner/retry"
  url "https://github.com/retry-runner/retry/archive/refs/tags/v0.1.0.tar.gz"
  sha256 "0000000000000000000000000000000000000000000000000000000000000000" # at a release: the tarball's
  license any_of: ["MIT", "Apache-2.0"]
  head "https://github.com/retry-runner/retry.git", branch: "main"

  depends_on "rust" => :build

  conflicts_with "retry", because: "both install a `retry` binary"

  def install
    system "cargo", "install", *std_cargo_args
    man1.install "man/retry.1"
    bash_completion.install "completions/retry.bash" => "retry"
    zsh_completion.install "completions/_retry"
    fish_completion.install "completions/retry.fish"
  end

  test do
    assert_match "retry #{version}", shell_output("#{bin}/retry --version")
    # Fails twice, then succeeds: three attempts, exit 0.
    (testpath/"flaky").write <<~SH
      #!/bin/sh
      n=$(($(cat count 2>/dev/null || echo 0) + 1)); echo $n > count; [ $n -ge 3 ]
    SH
    chmod 0755, testpath/"flaky"
    system bin/"retry", "--delay", "10ms", "--", "./flaky"
    assert_equal "3", (testpath/"count").read.strip
    # A permanent failure stops at once, with the command's status.
    shell_output("#{bin}/retry --stop-on-exit 7 -- sh -c 'exit 7'", 7)
  end
end
