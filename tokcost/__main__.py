from tokcost.cli.app import main

main()
