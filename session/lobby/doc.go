// Package lobby is Basalt's second built-in handler: an empty world where
// players wait together. A player spawns as a spectator floating above the
// origin of an empty, always-noon overworld, is greeted in chat, sees other
// players join and leave, can chat, and has two commands: /list names the
// players in the lobby and /leave disconnects. The lobby keeps each player
// until they leave, their connection ends or Shutdown.
//
// A Lobby holds what players share; its NewHandler is a
// session.Config.NewHandler that makes each session's handler:
//
//	l := lobby.New(lobby.Config{Greeting: "Welcome, {player}!"})
//	s := session.New(conn, session.Config{NewHandler: l.NewHandler})
//	err := s.Run(ctx)
//	...
//	l.Shutdown("Server closed.")
//
// The session has logged the player in (and buffered PlayStatus
// LoginSuccess) before NewHandler runs. The lobby then completes the join
// as gophertunnel's own server does (minecraft/conn.go), checked against
// gophertunnel's client:
//
//	server: ResourcePacksInfo (no packs)
//	client: ResourcePackClientResponse AllPacksDownloaded
//	server: ResourcePackStack (empty)
//	client: ResourcePackClientResponse Completed
//	server: JigsawStructureData, VoxelShapes, StartGame (spectator),
//	        ItemRegistry (no items), BiomeDefinitionList
//	client: RequestChunkRadius
//	server: ChunkRadiusUpdated (at most 4), AvailableCommands (list, leave),
//	        UpdateAbilities (fly, no-clip, invulnerable),
//	        NetworkChunkPublisherUpdate, LevelChunk for each empty chunk
//	        within the radius, PlayStatus PlayerSpawn, CreativeContent
//	client: SetLocalPlayerAsInitialised
//	server: Text (the greeting); Text "<name> joined the lobby" to the others
//
// A join that has not reached SetLocalPlayerAsInitialised within
// Config.JoinTimeout is ended. Only the packets the lobby reads are
// decoded (packets.RawHandler lets the rest, PlayerAuthInput every tick
// among them, by as bytes).
package lobby
