// Package integration holds end-to-end tests that run Basalt over real UDP
// sockets on loopback against independent peers (go-raknet, gophertunnel).
package integration
