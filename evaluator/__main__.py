from evaluator.cli import finish, main

finish(main())
