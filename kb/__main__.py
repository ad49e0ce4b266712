from kb.cli.app import main

main()
