// Command basalt runs a Minecraft Bedrock server skeleton on Basalt's own
// RakNet transport.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	configPath := flag.String("config", "config.toml", "path of the configuration file")
	flag.Parse()
	fmt.Fprintf(os.Stderr, "basalt: configuration %s: server not built yet\n", *configPath)
	os.Exit(1)
}
