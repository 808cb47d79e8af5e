// Package motd encodes and parses the semicolon-separated status string a
// Bedrock server returns in its unconnected pong, e.g.
//
//	MCPE;Dedicated Server;527;1.19.1;0;10;13253860892328930865;Bedrock level;Survival;1;19132;19133;
package motd
