// Package session runs one Bedrock session per transport connection: it
// decodes the 0xfe batches a client sends, hands each game packet to a
// pluggable Handler and batches the packets the handler writes back.
package session
