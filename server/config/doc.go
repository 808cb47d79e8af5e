// Package config is config.toml: UserConfig, one struct per TOML table,
// with each key's comment in its tag; DefaultUserConfig, the one place a
// key's default is set (taken from the owning package's constant where
// there is one); Validate, which names every bad key and its fix; the
// commented default file; and errors that point at the line that set a
// key. UserConfig.Config turns it into the server.Config a server runs
// with.
//
//	uc, err := config.Load("config.toml") // written with the defaults if missing
//	if err != nil {
//		return err // names the key, its line and the fix
//	}
//	log, logFile, err := uc.Logger()
//	if err != nil {
//		return err
//	}
//	defer logFile.Close()
//	c, err := uc.Config(log)
//	if err != nil {
//		return err
//	}
//	return c.New().Run(ctx)
package config
