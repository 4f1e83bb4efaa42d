package lint

func draRules() []Rule { return nil }
