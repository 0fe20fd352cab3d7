# Placeholder until the deploy issue: see README.
FROM debian:12
