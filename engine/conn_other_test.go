//go:build !linux

package engine

func refuseAll(*Socket) {}
