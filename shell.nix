# Nix users: `nix-shell` gives the toolchain to build kubernix and, from
# nixpkgs, the host tools it runs (runc, crun, CNI plugins, iptables, ...).
# The pinned upstream binaries (Kubernetes v1.37.2, containerd v2.4.2, etcd,
# crictl, CoreDNS) are built by `make bins` as on any machine, so they match
# assets/versions.env exactly whatever nixpkgs revision you use.
{ pkgs ? import <nixpkgs> { } }:
import ./nix/shell.nix { inherit pkgs; }
