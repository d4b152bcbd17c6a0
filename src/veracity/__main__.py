from veracity.cli import main

main()
