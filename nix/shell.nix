# The development shell; see ../shell.nix.
{ pkgs }:
pkgs.mkShell {
  name = "kubernix";
  nativeBuildInputs = with pkgs; [ go gnumake git ];
  buildInputs = with pkgs; [
    runc
    crun
    cni-plugins
    nftables # nft: kube-proxy runs in nftables mode
    iptables
    iproute2
    util-linux
    pkgsStatic.busybox
    rootlesskit
    slirp4netns
    shadow # newuidmap, newgidmap
  ];
  shellHook = ''
    export GOFLAGS=-buildvcs=false
    # kubernix looks for CNI plugins in /usr/lib/cni and /opt/cni/bin; point
    # it at nixpkgs' instead.
    export KUBERNIX_CNI_DIR=${pkgs.cni-plugins}/bin
  '';
}
