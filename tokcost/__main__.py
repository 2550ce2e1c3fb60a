from tokcost.cli import main

main()
