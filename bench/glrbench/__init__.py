"""glrmask benchmark harness (not tests): glrmask Static/Dynamic side by side with peers."""
