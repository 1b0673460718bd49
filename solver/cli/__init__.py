"""The command line: parse arguments, call one step of the flow, print what the report renders."""
