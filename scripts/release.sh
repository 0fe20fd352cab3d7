#!/usr/bin/env bash
# Builds a release of the checked-out commit, every artefact stamped with the
# same version, commit, date and source taken from git (docs/deploy.md,
# "Build a release"):
#   - the image REGISTRY/tpu-webhook:VERSION from Dockerfile, with the build
#     arguments VERSION, REVISION, CREATED, SOURCE and SOURCE_DATE_EPOCH, so
#     that its org.opencontainers.image.{version,revision,created,source}
#     labels and the binary inside (which logs "VERSION (REVISION)") agree;
#   - the Helm chart packaged (OUT/kuberay-tpu-webhook-CHART.tgz) with
#     appVersion VERSION and its image repository set to the registry's;
#   - the CLI tarball OUT/tpu-webhook-VERSION-linux-ARCH.tar.gz (the binary,
#     LICENSE, README.md, docs/*.md; reproducible: sorted, owner 0, mtime of the commit);
#   - OUT/SHA256SUMS over both files;
# then prints the commands that push them (or runs them with --push).
#
#   scripts/release.sh --registry REGISTRY [--source URL] [--out DIR]
#                      [--binary FILE] [--helm FILE] [--engine docker|podman]
#                      [--dry-run] [--push] [--allow-dirty]
#
# --dry-run builds everything but the image: it prints the image's build
# command and checks it (every build argument declared in Dockerfile, every
# label fed by its argument, the versions of CMakeLists.txt, Dockerfile and
# Chart.yaml equal), for machines with no container engine; tests/deploy/
# test_release.py runs it. --binary takes a tpu-webhook already built from
# this commit (else one is built in build-release/ with the same commit and
# date); its version and commit must be the release's. --helm defaults to
# helm on PATH, else build-tools/helm3/helm (scripts/fetch-test-helm.sh).
# --allow-dirty releases a tree with uncommitted changes, marked
# "<commit>-dirty" (tests only: never push such a release).
set -euo pipefail
cd "$(dirname "$0")/.."

die() {
    echo "release: $*" >&2
    exit 1
}

registry="" source="" out="dist" binary="" helm="" engine="" dry=0 push=0 dirty_ok=0
dockerfile=Dockerfile
while [ $# -gt 0 ]; do
    case $1 in
    --registry) registry=${2:?--registry needs a value}; shift ;;
    --source) source=${2:?--source needs a value}; shift ;;
    --out) out=${2:?--out needs a value}; shift ;;
    --binary) binary=${2:?--binary needs a value}; shift ;;
    --helm) helm=${2:?--helm needs a value}; shift ;;
    --engine) engine=${2:?--engine needs a value}; shift ;;
    --dockerfile) dockerfile=${2:?--dockerfile needs a value}; shift ;; # tests
    --dry-run) dry=1 ;;
    --push) push=1 ;;
    --allow-dirty) dirty_ok=1 ;;
    -h | --help)
        sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
        exit 0
        ;;
    *) die "unknown argument $1 (see --help)" ;;
    esac
    shift
done
[ -n "$registry" ] || die "--registry REGISTRY is required (where the image is pushed, e.g. us-docker.pkg.dev/PROJECT/REPO)"
[ "$push" = 1 ] && [ "$dry" = 1 ] && die "--push and --dry-run exclude each other"

# ---- what the release is, from git ------------------------------------------
git rev-parse --git-dir >/dev/null 2>&1 || die "not a git checkout: the revision and date come from git"
revision=$(git rev-parse --short=12 HEAD)
if ! git diff --quiet HEAD --; then
    [ "$dirty_ok" = 1 ] || die "uncommitted changes: commit them first (the image would not match $revision)"
    revision="$revision-dirty"
    [ "$push" = 1 ] && die "--push of a dirty tree is refused"
fi
epoch=$(git log -1 --format=%ct HEAD)
created=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)
if [ -z "$source" ]; then
    source=$(git remote get-url origin 2>/dev/null || true)
    case $source in
    git@*:*) source="https://${source#git@}" && source=${source/://} ;;
    esac
    source=${source%.git}
fi
case $source in
https://*) ;;
"") die "no source URL: the checkout has no origin remote; pass --source https://..." ;;
*) die "--source $source: give the repository's https:// address (the image's source label)" ;;
esac

version=$(sed -n 's/^project(tpu-webhook VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
[ -n "$version" ] || die "CMakeLists.txt: no project(tpu-webhook VERSION x.y.z)"
docker_version=$(sed -n 's/^ARG VERSION=\(.*\)$/\1/p' "$dockerfile")
chart=deploy/helm/kuberay-tpu-webhook
app_version=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\} *$/\1/p' "$chart/Chart.yaml")
chart_version=$(sed -n 's/^version: *\(.*\)$/\1/p' "$chart/Chart.yaml")
[ "$docker_version" = "$version" ] || die "$dockerfile: ARG VERSION=$docker_version, CMakeLists.txt says $version"
[ "$app_version" = "$version" ] || die "$chart/Chart.yaml: appVersion $app_version, CMakeLists.txt says $version"
image="${registry%/}/tpu-webhook:$version"

# ---- the image: build arguments and labels, checked against Dockerfile -------
args=(VERSION="$version" REVISION="$revision" CREATED="$created" SOURCE="$source"
    SOURCE_DATE_EPOCH="$epoch")
declare -A label_arg=([version]=VERSION [revision]=REVISION [created]=CREATED [source]=SOURCE)
for a in "${args[@]}"; do
    name=${a%%=*}
    grep -q "^ARG $name\(=.*\)\{0,1\}$" "$dockerfile" || die "$dockerfile: no ARG $name, which the release passes"
done
for key in version revision created source; do
    grep -q "org\.opencontainers\.image\.$key=\"\$${label_arg[$key]}\"" "$dockerfile" ||
        die "$dockerfile: no label org.opencontainers.image.$key=\"\$${label_arg[$key]}\""
done
build=(build)
for a in "${args[@]}"; do build+=(--build-arg "$a"); done
build+=(-t "$image" .)
echo "image: $image"
for key in version revision created source; do
    v=${label_arg[$key]}
    for a in "${args[@]}"; do [ "${a%%=*}" = "$v" ] && echo "  label org.opencontainers.image.$key=${a#*=}"; done
done
echo "  the binary logs: tpu-webhook $version ($revision)"

if [ "$dry" = 1 ]; then
    echo "dry run: would run: ${engine:-docker} ${build[*]}"
else
    if [ -z "$engine" ]; then
        engine=$(command -v docker || command -v podman || true)
        [ -n "$engine" ] || die "no docker or podman on PATH: install one, or --dry-run"
    fi
    "$engine" "${build[@]}"
    for key in version revision created source; do
        want=""
        for a in "${args[@]}"; do [ "${a%%=*}" = "${label_arg[$key]}" ] && want=${a#*=}; done
        got=$("$engine" image inspect --format "{{index .Config.Labels \"org.opencontainers.image.$key\"}}" "$image")
        [ "$got" = "$want" ] || die "$image: label org.opencontainers.image.$key is \"$got\", not \"$want\""
    done
fi

# ---- the binary of the CLI tarball -------------------------------------------
if [ -z "$binary" ]; then
    WH_GIT_COMMIT=$revision SOURCE_DATE_EPOCH=$epoch cmake -S . -B build-release \
        -DCMAKE_C_COMPILER=gcc -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF >/dev/null
    cmake --build build-release -j2 --target tpu-webhook >/dev/null
    binary=build-release/tpu-webhook
fi
[ -x "$binary" ] || die "$binary: not an executable"
got=$("$binary" --version | sed -n '1p;2p' | tr '\n' ' ')
want="tpu-webhook $version commit: $revision "
# A dirty tree's binary may predate the last edit: its commit is compared.
[ "$dirty_ok" = 1 ] && got=${got/-dirty /} && want=${want/-dirty /}
[ "${got% }" = "${want% }" ] ||
    die "$binary says \"$got\"; the release is $version, commit $revision (rebuild it from this commit)"

# ---- the chart, with the registry's image -------------------------------------
if [ -z "$helm" ]; then
    helm=$(command -v helm || echo build-tools/helm3/helm)
fi
[ -x "$helm" ] || die "$helm: no helm (install it, or run scripts/fetch-test-helm.sh)"
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$chart" "$work/"
values="$work/kuberay-tpu-webhook/values.yaml"
grep -q '^    repository: tpu-webhook$' "$values" || die "$chart/values.yaml: no 'repository: tpu-webhook' line to point at $registry"
sed -i "s|^    repository: tpu-webhook\$|    repository: ${registry%/}/tpu-webhook|" "$values"
"$helm" package "$work/kuberay-tpu-webhook" --version "$chart_version" --app-version "$version" \
    -d "$out" >/dev/null
chart_tgz="kuberay-tpu-webhook-$chart_version.tgz"
[ -f "$out/$chart_tgz" ] || die "helm package wrote no $chart_tgz"

# ---- the CLI tarball and the checksums ----------------------------------------
arch=$(uname -m | sed 's/x86_64/amd64/; s/aarch64/arm64/')
name="tpu-webhook-$version-linux-$arch"
mkdir -p "$work/$name"
cp "$binary" "$work/$name/tpu-webhook"
cp LICENSE README.md "$work/$name/"
# The docs the README links to; the alerts' runbook_url is a path among
# them (docs/troubleshooting.md#<section>).
mkdir "$work/$name/docs"
cp docs/*.md "$work/$name/docs/"
tar -C "$work" --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner \
    -cf - "$name" | gzip -9n >"$out/$name.tar.gz"
(cd "$out" && sha256sum "$name.tar.gz" "$chart_tgz" >SHA256SUMS)
echo "chart: $out/$chart_tgz (version $chart_version, appVersion $version, image ${registry%/}/tpu-webhook)"
echo "cli: $out/$name.tar.gz"
echo "checksums: $out/SHA256SUMS"

push_cmds=("${engine:-docker} push $image"
    "$helm push $out/$chart_tgz oci://${registry%/}/charts")
if [ "$push" = 1 ]; then
    for c in "${push_cmds[@]}"; do
        echo "+ $c"
        $c
    done
else
    echo "ready to push:"
    for c in "${push_cmds[@]}"; do echo "  $c"; done
    echo "  and attach $name.tar.gz and SHA256SUMS to the release of $revision"
fi
