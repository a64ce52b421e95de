package main

// commands lists every subcommand in the order usage shows them. serve lives in serve.go;
// the people-facing commands live in cli_*.go files.
func commands() []command {
	return []command{
		serveCommand(),
		listCommand(),
		showCommand(),
		searchCommand(),
		compactCommand(),
		deleteCommand(),
		importCommand(),
		exportCommand(),
		migrateCommand(),
		statsCommand(),
		verifyCommand(),
		reindexCommand(),
		redactCommand(),
		pruneCommand(),
		hookCommand(),
		versionCommand(),
		uiCommand(),
	}
}
