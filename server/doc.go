// Package server ties the RakNet listener, the live MOTD and the Bedrock
// sessions together: it owns the listener, the session registry, the player
// limit and the server's lifecycle.
package server
