# Puts Node.js 24 first on PATH, for the shell that sources it:
#
#   . scripts/use-node.sh
#
# When the machine's `node` is older than 24 (Debian's, or an image's Node 20),
# it fetches Node's own Linux build from the npm registry (the `node-linux-<arch>`
# package that the `node` package installs) into .node/<version>/ in the checkout,
# once, and uses that. npm itself stays the machine's: it runs on whichever node
# is first on PATH. Prints one line saying which Node is used; returns 1 with one
# line when no Node 24 can be had.

magpie_use_node() {
  local want=24 root dir arch tarball have
  root="$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")/.." && pwd)" || return 1
  have="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
  if [ "$have" -ge "$want" ] 2>/dev/null; then
    echo "node: using $(command -v node) ($(node --version))"
    return 0
  fi
  case "$(uname -m)" in
    x86_64) arch=x64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) echo "node: no Node $want build for $(uname -m) in the npm registry; install Node $want yourself" >&2; return 1 ;;
  esac
  dir="$root/.node/$want"
  if [ ! -x "$dir/bin/node" ]; then
    command -v npm >/dev/null 2>&1 || { echo "node: npm is needed to fetch Node $want (or install Node $want yourself)" >&2; return 1; }
    local tmp
    tmp="$(mktemp -d)" || return 1
    if ! tarball="$(cd "$tmp" && npm pack --silent "node-linux-$arch@$want" 2>/dev/null | tail -n 1)" || [ ! -f "$tmp/$tarball" ]; then
      rm -rf "$tmp"
      echo "node: could not fetch node-linux-$arch@$want from the npm registry; install Node $want yourself" >&2
      return 1
    fi
    mkdir -p "$tmp/x" && tar -xzf "$tmp/$tarball" -C "$tmp/x" || { rm -rf "$tmp"; echo "node: the Node $want package did not unpack" >&2; return 1; }
    mkdir -p "$root/.node"
    rm -rf "$dir" && mv "$tmp/x/package" "$dir" && rm -rf "$tmp"
  fi
  export PATH="$dir/bin:$PATH"
  echo "node: using $dir/bin/node ($(node --version)), fetched from the npm registry"
}

magpie_use_node
