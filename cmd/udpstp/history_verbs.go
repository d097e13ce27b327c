package main

// historyVerbs are what `udpstp history` does (history.go, left out of the
// small build); here, without a build tag, for completion.go.
var historyVerbs = []string{"list", "show", "export", "plot"}
