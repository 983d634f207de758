package process

// ShellJoin quotes argv for a POSIX shell where needed and joins it with
// spaces, as the header line Start writes to a log shows a command.
func ShellJoin(argv []string) string { return shellJoin(argv) }
