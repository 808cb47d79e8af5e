// Package join spawns a logged-in player into a world: the part of the
// Bedrock protocol between PlayStatus LoginSuccess and the player standing
// in the world, which every server that has a world repeats. A handler
// starts a Join with the GameData of its world (as gophertunnel's
// Conn.StartGame takes a GameData) and hands it every packet it decodes
// until the Join reports the player spawned; the lobby (session/lobby) is
// one such handler.
//
// # The sequence
//
// After the session's PlayStatus LoginSuccess, for every protocol the build
// speaks (2193 and 2225 lay some of these packets out differently; the
// Codec takes care of that):
//
//	S ResourcePacksInfo (no packs)
//	C ResourcePackClientResponse AllPacksDownloaded (or SendPacks asking for nothing)
//	S ResourcePackStack (empty)
//	C ResourcePackClientResponse Completed, in any phase up to here
//	S JigsawStructureData, VoxelShapes, StartGame, ItemRegistry (empty), CreativeContent (empty)
//	C RequestChunkRadius
//	S ChunkRadiusUpdated, GameData.BeforeSpawn..., NetworkChunkPublisherUpdate,
//	  LevelChunk (biomes only) for every chunk within the radius of the spawn,
//	  PlayStatus PlayerSpawn, UpdateAttributes (movement 0.1)
//	C SetLocalPlayerAsInitialised (StartGame's runtime ID): spawned
//
// # Why each step is as it is
//
// Each choice follows servers that vanilla clients join every day:
//
//   - Completed is taken in any resource pack phase and a repeated response
//     changes nothing: gophertunnel's server (minecraft/conn.go,
//     handleResourcePackClientResponse) and BDS do so, and PrismarineJS
//     bedrock-protocol answers ResourcePacksInfo with Completed at once.
//     SendPacks asking for no pack is answered like AllPacksDownloaded.
//   - JigsawStructureData and VoxelShapes before StartGame, as
//     gophertunnel's server sends them (minecraft/conn.go, startGame).
//   - StartGame with server-authoritative movement with rewind: a zero
//     (client-authoritative) movement mode made the real client report
//     "Server sent broken packet" (gophertunnel#313). The mode field is gone
//     from the 2193 and 2225 layouts (minecraft-data's start_game has only
//     rewind_history_size and server_authoritative_block_breaking), server
//     authority being the only mode left; servers built on CloudburstMC's
//     protocol library send SERVER_WITH_REWIND with server-authoritative
//     block breaking. The rewind history, 40 ticks (2 s), is our choice:
//     the protocol leaves its size to the server (PocketMine-MP makes it a
//     setting, movement.rewind-history-size).
//   - One entity ID for StartGame's unique and runtime ID, the abilities
//     and the attributes: the client matches them (gophertunnel#313,
//     BedrockConnect), and SetLocalPlayerAsInitialised must name the same
//     runtime ID, or the join ends.
//   - An ItemRegistry with an empty list is required since 1.21.60
//     (BedrockConnect#565) and enough while no items are sent; an empty
//     CreativeContent is required, or the client crashes (BedrockConnect#103;
//     BedrockConnect sends it right after StartGame).
//   - No BiomeDefinitionList: not needed since 1.21.80 (gophertunnel#448);
//     gophertunnel's server no longer sends one.
//   - LevelChunks around the spawn before PlayStatus PlayerSpawn, with no
//     sub-chunks (biomes only), in the layout Geyser's empty chunk uses:
//     one biome section per 16 blocks of the dimension's height (24 in the
//     overworld, 8 in the nether, 16 in the end), the first a single-value
//     palette and the rest "same as previous", then a border byte. A fixed
//     count of 32 sections is known to crash clients (Geyser#3350).
//   - UpdateAttributes with movement speed 0.1, without which "clients move
//     very fast" (BedrockConnect, PacketHandler/BCPlayer), sent after
//     PlayStatus PlayerSpawn as BedrockConnect sends it.
//
// A Join is driven from its session's goroutine: Start in NewHandler,
// HandlePacket from the handler. Phase may be read from any goroutine.
//
// # How the join is tested
//
// The interop tests run the lobby in offline mode (`OnlineMode = false` in
// `integration/lobby_test.go` and `integration/prismarine_test.go`,
// `AuthenticationDisabled` in the `server.Config` they fill in by hand);
// online mode itself is tested against a local issuer
// (`integration/online_test.go`), which refuses those same offline clients.
//
// The join follows what BedrockConnect, Geyser and gophertunnel's server do
// for the game (the sources are cited in `session/join`'s package doc). It is
// tested with gophertunnel's client at protocol 2193 and with PrismarineJS
// bedrock-protocol's client at 2193 and 2225 over three RakNet
// implementations (`integration/lobby_test.go`, `integration/prismarine_test.go`),
// not yet with the game itself.
package join
