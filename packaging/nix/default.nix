# `nix-build packaging/nix`: retry built from this checkout (package.nix).
{
  pkgs ? import <nixpkgs> { },
}:
pkgs.callPackage ./package.nix { }
