#!/bin/sh
# Installs every Debian and npm package the build and the tests need.
# Idempotent and quick when everything is present.
set -e
PKGS="gcc make python3 libisal-dev libsnappy-dev liblz4-dev libzstd-dev libcmocka-dev librdkafka-dev kcat
python3-confluent-kafka python3-kafka libsqlite3-dev nodejs npm
clang libclang-rt-14-dev
python3-lz4 python3-snappy python3-xxhash e2fsprogs mount
zookeeper libzookeeper-mt-dev libjansson-dev python3-kazoo faketime
libmicrohttpd-dev libssl-dev openssl prometheus curl chromium
golang-go golang-github-shopify-sarama-dev golang-github-segmentio-kafka-go-dev
golang-github-datadog-zstd-dev golang-github-davecgh-go-spew-dev
golang-github-eapache-go-xerial-snappy-dev golang-github-golang-snappy-dev
golang-github-pierrec-lz4-dev golang-github-rcrowley-go-metrics-dev golang-golang-x-net-dev
golang-gopkg-eapache-go-resiliency.v1-dev golang-gopkg-eapache-queue.v1-dev"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# nodejs may come from another apt source that bundles npm: accept a working npm.
case "$missing" in *" npm"*) command -v npm >/dev/null 2>&1 && missing=$(echo "$missing" | sed 's/ npm//') ;; esac
case "$missing" in *" nodejs"*) command -v node >/dev/null 2>&1 && missing=$(echo "$missing" | sed 's/ nodejs//') ;; esac
if [ -n "$missing" ]; then
	echo "deps: installing$missing"
	SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi
if [ -f tests/js/package.json ] && { [ ! -d tests/js/node_modules/kafkajs ] || [ ! -d tests/js/node_modules/playwright-core ]; }; then
	echo "deps: installing npm packages in tests/js"
	(cd tests/js && npm ci --no-audit --no-fund --silent)
fi
